package llama

/*
#include "gojev.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// Token is a llama_token: an index into the vocabulary, in [0, n_vocab).
type Token = int32

// NullToken is LLAMA_TOKEN_NULL, what llama.cpp returns for an absent special token.
const NullToken Token = -1

// Vocab is a model's llama_vocab. It belongs to its Model (no Close of its own) and is safe for
// concurrent use while the model is open: llama.h documents tokenization as thread-safe.
type Vocab struct {
	model    *Model
	c        *C.struct_llama_vocab
	n        int
	bos, eos Token
	addBOS   bool
}

func newVocab(m *Model, c *C.struct_llama_vocab) *Vocab {
	return &Vocab{
		model:  m,
		c:      c,
		n:      int(C.llama_vocab_n_tokens(c)),
		bos:    Token(C.llama_vocab_bos(c)),
		eos:    Token(C.llama_vocab_eos(c)),
		addBOS: bool(C.llama_vocab_get_add_bos(c)),
	}
}

// NVocab returns n_vocab, the number of tokens (llama_vocab_n_tokens).
func (v *Vocab) NVocab() int { return v.n }

func (v *Vocab) acquire() error {
	_, err := v.model.acquire()
	return err
}

func (v *Vocab) release() { v.model.release() }

// Tokenize converts text to tokens (llama_tokenize). addSpecial is add_special (prepend BOS /
// append EOS when the model's metadata asks for them); parseSpecial is parse_special (text such
// as "<start_of_turn>" becomes the control token instead of plain text). Errors wrap
// ErrTokenize; text longer than math.MaxInt32 bytes is refused, and so is text holding a
// four-byte UTF-8 form of a code point above U+10FFFF (see outOfRangeUTF8). Other invalid UTF-8
// is tokenized as llama.cpp does it: each byte it cannot decode becomes U+FFFD.
func (v *Vocab) Tokenize(text string, addSpecial, parseSpecial bool) ([]Token, error) {
	if len(text) > math.MaxInt32 {
		return nil, fmt.Errorf("%w: text of %d bytes exceeds int32", ErrTokenize, len(text))
	}
	if at, cpt := outOfRangeUTF8(text); at >= 0 {
		return nil, fmt.Errorf("%w: bytes %d..%d encode U+%X, above U+10FFFF (llama_tokenize would abort on it)",
			ErrTokenize, at, at+3, cpt)
	}
	if err := v.acquire(); err != nil {
		return nil, err
	}
	defer v.release()
	// A token covers at least one byte, plus BOS/EOS and a possible SentencePiece space prefix.
	capacity := len(text) + 4
	for range 2 {
		out := make([]Token, capacity)
		var textPtr *C.char
		if len(text) > 0 {
			textPtr = (*C.char)(unsafe.Pointer(unsafe.StringData(text)))
		}
		n := int(C.llama_tokenize(v.c, textPtr, C.int32_t(len(text)),
			(*C.llama_token)(unsafe.Pointer(unsafe.SliceData(out))), C.int32_t(len(out)),
			C.bool(addSpecial), C.bool(parseSpecial)))
		switch {
		case n == math.MinInt32:
			return nil, fmt.Errorf("%w: result exceeds int32 tokens", ErrTokenize)
		case n >= 0:
			return out[:n], nil
		default:
			capacity = -n
		}
	}
	return nil, fmt.Errorf("%w: token count kept growing", ErrTokenize)
}

// outOfRangeUTF8 returns the byte offset and value of the first code point above U+10FFFF that
// llama.cpp's decoder yields for text, or -1. unicode_cpts_from_utf8 (src/unicode.cpp) reads a
// lead byte 11110xxx and three continuation bytes as a code point of up to 21 bits without
// checking its range, and skips one byte at a time past anything else it cannot decode; a value
// above U+10FFFF then reaches unicode_cpt_to_utf8, which throws std::invalid_argument through
// the C API, and the process aborts. This walks text as that decoder does. Valid UTF-8 never
// holds such a form, so it is checked only when text is not valid UTF-8.
func outOfRangeUTF8(text string) (int, rune) {
	if utf8.ValidString(text) {
		return -1, 0
	}
	cont := func(i int) bool { return i < len(text) && text[i]&0xc0 == 0x80 }
	for i := 0; i < len(text); {
		b := text[i]
		switch {
		case b&0x80 == 0, b&0x40 == 0:
			i++
		case b&0x20 == 0:
			if cont(i + 1) {
				i += 2
			} else {
				i++
			}
		case b&0x10 == 0:
			if cont(i+1) && cont(i+2) {
				i += 3
			} else {
				i++
			}
		case b&0x08 == 0:
			if !cont(i+1) || !cont(i+2) || !cont(i+3) {
				i++
				continue
			}
			cpt := rune(b&0x07)<<18 | rune(text[i+1]&0x3f)<<12 | rune(text[i+2]&0x3f)<<6 | rune(text[i+3]&0x3f)
			if cpt > unicode.MaxRune {
				return i, cpt
			}
			i += 4
		default:
			i++
		}
	}
	return -1, 0
}

// CheckToken returns an error wrapping ErrToken unless 0 <= t < n_vocab.
func (v *Vocab) CheckToken(t Token) error {
	if t < 0 || int(t) >= v.n {
		return fmt.Errorf("%w: %d not in [0, %d)", ErrToken, t, v.n)
	}
	return nil
}

// Detokenize converts tokens back to text (llama_detokenize). removeSpecial is remove_special
// (drop BOS/EOS the model adds); unparseSpecial is unparse_special (render control tokens as
// their text). Token ids are range-checked first (ErrToken).
func (v *Vocab) Detokenize(tokens []Token, removeSpecial, unparseSpecial bool) (string, error) {
	for _, t := range tokens {
		if err := v.CheckToken(t); err != nil {
			return "", err
		}
	}
	if len(tokens) == 0 {
		return "", nil
	}
	if len(tokens) > math.MaxInt32/64 {
		return "", fmt.Errorf("%w: %d tokens is too many", ErrTokenize, len(tokens))
	}
	if err := v.acquire(); err != nil {
		return "", err
	}
	defer v.release()
	capacity := len(tokens)*8 + 16
	for range 2 {
		buf := make([]byte, capacity)
		n := int(C.llama_detokenize(v.c, (*C.llama_token)(unsafe.Pointer(unsafe.SliceData(tokens))), C.int32_t(len(tokens)),
			(*C.char)(unsafe.Pointer(unsafe.SliceData(buf))), C.int32_t(len(buf)),
			C.bool(removeSpecial), C.bool(unparseSpecial)))
		if n >= 0 {
			return string(buf[:n]), nil
		}
		if n == math.MinInt32 {
			return "", fmt.Errorf("%w: detokenized text exceeds int32", ErrTokenize)
		}
		capacity = -n
	}
	return "", fmt.Errorf("%w: text length kept growing", ErrTokenize)
}

// TokenToPiece returns one token's text (llama_token_to_piece with lstrip 0). special renders
// control tokens as their text (e.g. "<bos>") instead of nothing.
func (v *Vocab) TokenToPiece(t Token, special bool) (string, error) {
	if err := v.CheckToken(t); err != nil {
		return "", err
	}
	if err := v.acquire(); err != nil {
		return "", err
	}
	defer v.release()
	buf := make([]byte, 64)
	for range 2 {
		n := int(C.llama_token_to_piece(v.c, C.llama_token(t), (*C.char)(unsafe.Pointer(unsafe.SliceData(buf))), C.int32_t(len(buf)), 0, C.bool(special)))
		if n >= 0 {
			return string(buf[:n]), nil
		}
		buf = make([]byte, -n)
	}
	return "", fmt.Errorf("%w: piece of token %d kept growing", ErrTokenize, t)
}

// BOS returns the beginning-of-sentence token (llama_vocab_bos), or NullToken.
func (v *Vocab) BOS() Token { return v.bos }

// EOS returns the end-of-sentence token (llama_vocab_eos), or NullToken.
func (v *Vocab) EOS() Token { return v.eos }

// BOSText returns the BOS token's text as chat templates see it as bos_token (the piece with
// special=true, as llama.cpp's common_token_to_piece does for templates), or "" when the model
// has no BOS.
func (v *Vocab) BOSText() (string, error) { return v.specialText(v.BOS()) }

// EOSText returns the EOS token's text (see BOSText), or "".
func (v *Vocab) EOSText() (string, error) { return v.specialText(v.EOS()) }

func (v *Vocab) specialText(t Token) (string, error) {
	if t == NullToken {
		return "", nil
	}
	return v.TokenToPiece(t, true)
}

// AddBOS reports whether tokenizing with add_special prepends BOS (llama_vocab_get_add_bos).
func (v *Vocab) AddBOS() bool { return v.addBOS }
