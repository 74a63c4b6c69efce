package contract

import (
	"fmt"
	"slices"
	"strconv"
)

// Tokenizer is what the start-up checks need from a model: tokenize with add_special=false
// and parse_special=true (as the seed's /tokenize call and the decision path do), and
// detokenize. llama.Vocab-backed implementations live in the engine; tests use fakes.
type Tokenizer interface {
	Tokenize(text string) ([]int32, error)
	Detokenize(tokens []int32) (string, error)
}

// Slots are the token ids of the answer letters A..P, in Letters order.
type Slots [MaxOptions]int32

// ResolveSlots resolves the sixteen answer slots and proves they are exact single tokens
// (contract.rs resolve_slots): each letter alone tokenizes to one token (else
// ErrSlotNotSingleToken), the sixteen ids are distinct (else ErrSlotCollision), and
// detokenizing them in order gives exactly "ABCDEFGHIJKLMNOP" (else ErrSlotRoundTrip). A model
// that fails must not be scored.
func ResolveSlots(tok Tokenizer) (Slots, error) {
	var slots Slots
	for i, letter := range Letters {
		ids, err := tok.Tokenize(string(letter))
		if err != nil {
			return slots, fmt.Errorf("contract: tokenizing answer slot %q: %w", letter, err)
		}
		if len(ids) != 1 {
			return slots, fmt.Errorf("%w: %q is %d tokens %v; this model cannot serve the direct option-logit contract",
				ErrSlotNotSingleToken, letter, len(ids), ids)
		}
		slots[i] = ids[0]
	}
	unique := slices.Clone(slots[:])
	slices.Sort(unique)
	if len(slices.Compact(unique)) != len(slots) {
		return slots, fmt.Errorf("%w: %v", ErrSlotCollision, slots)
	}
	decoded, err := tok.Detokenize(slots[:])
	if err != nil {
		return slots, fmt.Errorf("contract: verifying answer-slot round trip: %w", err)
	}
	if decoded != Letters {
		return slots, fmt.Errorf("%w: they decode to %q instead of %q", ErrSlotRoundTrip, decoded, Letters)
	}
	return slots, nil
}

// BinarySlots are the token ids a binary readout accepts for each answer word (contract.rs
// BinarySlots): every single-token spelling among "yes"/" yes" and "no"/" no".
type BinarySlots struct {
	Yes []int32
	No  []int32
}

// ResolveBinarySlots resolves the yes/no slots (contract.rs resolve_binary_slots): for each word,
// the spellings word and " word" that are one token, deduplicated. A word with none returns
// ErrBinarySlot; a token shared by both words returns ErrSlotCollision. A spelling whose
// tokenization fails is skipped, as the seed does.
func ResolveBinarySlots(tok Tokenizer) (BinarySlots, error) {
	var groups [2][]int32
	for w, word := range BinaryWords {
		for _, spelling := range []string{word, " " + word} {
			ids, err := tok.Tokenize(spelling)
			if err != nil || len(ids) != 1 || slices.Contains(groups[w], ids[0]) {
				continue
			}
			groups[w] = append(groups[w], ids[0])
		}
		if len(groups[w]) == 0 {
			return BinarySlots{}, fmt.Errorf("%w: %q; it cannot serve the binary candidate contract", ErrBinarySlot, word)
		}
	}
	for _, id := range groups[0] {
		if slices.Contains(groups[1], id) {
			return BinarySlots{}, fmt.Errorf("%w: yes and no share token %d; this model cannot serve binary readouts", ErrSlotCollision, id)
		}
	}
	return BinarySlots{Yes: groups[0], No: groups[1]}, nil
}

// VerifyBoundary proves that appending an answer letter cannot change the prompt's
// tokenization (contract.rs verify_boundary): for each of the sixteen letters,
// tokenize(prompt + letter) must equal tokenize(prompt) followed by that letter's slot.
// Otherwise the last prompt token could merge with the letter and the scored logit would
// belong to a different token. It returns the prompt's tokens, so the caller need not
// tokenize again. Errors: ErrEmptyPrompt (no tokens), ErrBoundary (names the letter).
func VerifyBoundary(tok Tokenizer, prompt string, slots Slots) ([]int32, error) {
	texts := make([]string, len(Letters))
	for i, letter := range Letters {
		texts[i] = string(letter)
	}
	return verifyBoundary(tok, prompt, texts, slots[:], "slot")
}

// verifyBoundary is the boundary check of both contracts: for every answer text, tokenize(prompt
// + text) must equal tokenize(prompt) followed by that text's token ids[i]. what names the
// answers in the error ("slot", "spelling"). It returns the prompt's tokens.
func verifyBoundary(tok Tokenizer, prompt string, texts []string, ids []int32, what string) ([]int32, error) {
	base, err := tok.Tokenize(prompt)
	if err != nil {
		return nil, fmt.Errorf("contract: tokenizing the prompt: %w", err)
	}
	if len(base) == 0 {
		return nil, ErrEmptyPrompt
	}
	for i, text := range texts {
		combined, err := tok.Tokenize(prompt + text)
		if err != nil {
			return nil, fmt.Errorf("contract: tokenizing the prompt with %q appended: %w", text, err)
		}
		if len(combined) != len(base)+1 || !slices.Equal(combined[:len(base)], base) || combined[len(base)] != ids[i] {
			name := strconv.Quote(text)
			if what == "slot" {
				name = strconv.QuoteRune([]rune(text)[0]) // a letter: 'A'
			}
			return nil, fmt.Errorf("%w for %s %s: the prompt does not end in a position where %s stays one token",
				ErrBoundary, what, name, name)
		}
	}
	return base, nil
}
