package backend

import (
	"context"
	"fmt"
	"slices"
)

// ErrSpecialText: a message's content contains text that tokenizes as a special/control token
// (e.g. "<end_of_turn>"), which would let row content rewrite the prompt's structure.
var ErrSpecialText = fmt.Errorf("content contains special-token text")

// SpecialTokenizer is what CheckSpecialText needs: Backend's Tokenize and Detokenize.
type SpecialTokenizer interface {
	Tokenize(ctx context.Context, text string, parseSpecial bool) ([]int32, error)
	Detokenize(ctx context.Context, tokens []int32) (string, error)
}

// SpecialTextFinder is a runtime that knows its special tokens' texts (InProcess): a content
// without any of them needs no tokenizing to pass CheckSpecialText.
type SpecialTextFinder interface {
	// HasSpecialText reports whether text holds a control or unknown token's text: false
	// means its tokens are the same with and without parse_special.
	HasSpecialText(ctx context.Context, text string) bool
}

// CheckSpecialText refuses content whose tokens change when special-token text is parsed
// (parse_special): such text would become control tokens inside the rendered prompt, an
// injection path. The error wraps ErrSpecialText and names the first such token's text. A
// runtime that is a SpecialTextFinder and finds no special token's text in content passes it
// without tokenizing: llama.cpp splits text at the same places with and without
// parse_special then, so its tokens are the same.
func CheckSpecialText(ctx context.Context, tok SpecialTokenizer, content string) error {
	if f, ok := tok.(SpecialTextFinder); ok && !f.HasSpecialText(ctx, content) {
		return nil
	}
	plain, err := tok.Tokenize(ctx, content, false)
	if err != nil {
		return err
	}
	special, err := tok.Tokenize(ctx, content, true)
	if err != nil {
		return err
	}
	if slices.Equal(plain, special) {
		return nil
	}
	// Name the special token: from the first difference on, the first token whose text does
	// not tokenize back to itself without parse_special.
	i := 0
	for i < len(plain) && i < len(special) && plain[i] == special[i] {
		i++
	}
	for _, t := range special[i:] {
		text, err := tok.Detokenize(ctx, []int32{t})
		if err != nil {
			break
		}
		if again, err := tok.Tokenize(ctx, text, false); err == nil && !slices.Equal(again, []int32{t}) {
			return fmt.Errorf("%w %q", ErrSpecialText, text)
		}
	}
	return ErrSpecialText
}
