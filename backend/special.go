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

// CheckSpecialText refuses content whose tokens change when special-token text is parsed
// (parse_special): such text would become control tokens inside the rendered prompt, an
// injection path. The error wraps ErrSpecialText and names the first such token's text.
func CheckSpecialText(ctx context.Context, tok SpecialTokenizer, content string) error {
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
