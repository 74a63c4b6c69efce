package llama

/*
#include "gojev.h"
*/
import "C"

import (
	"fmt"
	"sync"
)

// FragmentTokenizer tokenizes as Vocab.Tokenize(text, false, parseSpecial) does, token for
// token, but splits the text at special tokens in Go first, as llama.cpp's
// tokenizer_st_partition does (llama-vocab.cpp), and keeps each plain fragment's tokens: a
// fragment seen before costs a map lookup instead of a llama_tokenize. A rendered prompt is
// such fragments (the system text, the template's head and tail between control tokens, the
// user's payload), so across the prompts of a run, and across a prompt and its boundary check's
// 16 probes (the prompt with a letter appended), only the fragments new to it are tokenized.
//
// The split is exact where llama.cpp tokenizes each fragment on its own: SentencePiece
// ("llama") and BPE ("gpt2", "gemma4") vocabularies, where no special token's text begins or
// ends in whitespace beside one that strips whitespace (lstrip/rstrip). Another vocabulary
// (Fragmented false), and a text in which two special tokens' texts overlap (where llama.cpp's
// result depends on the order it tries them), go to Vocab.Tokenize whole. Safe for concurrent
// use while the model is open.
type FragmentTokenizer struct {
	v          *Vocab
	fragmented bool
	why        string // why not fragmented
	specials   []special
	// trie of the specials' texts: edges (node<<8 | byte) -> node; node 0 is the root.
	edges map[uint64]int32
	ends  [][]int32 // per node, the specials whose text ends there
	first [256]bool // bytes a special's text begins with

	mu    sync.Mutex
	cache map[fragmentKey][]Token
	bytes int
}

// special is a token tokenizer_st_partition splits text at: a control, user-defined or unknown
// token (cache_special_tokens).
type special struct {
	id             Token
	text           string
	control        bool // control or unknown: split at only under parse_special
	lstrip, rstrip bool
}

// fragmentKey keys a plain fragment's tokens: its text, and whether it holds a control token's
// text that parse_special=false left in it (its tokens then depend on the flag).
type fragmentKey struct {
	text     string
	unparsed bool
}

// Bounds of the fragment cache: it is emptied when it passes them, and longer fragments are
// not kept.
const (
	fragmentCacheBytes   = 32 << 20
	fragmentCacheEntries = 1 << 16
	fragmentMaxBytes     = 1 << 20
)

// NewFragmentTokenizer reads the vocabulary's special tokens (llama_vocab_get_text and
// llama_vocab_get_attr over every token) and decides whether their split can be done in Go
// (Fragmented). Errors: the model is closed (ErrClosed).
func NewFragmentTokenizer(v *Vocab) (*FragmentTokenizer, error) {
	t := &FragmentTokenizer{v: v, edges: map[uint64]int32{}, ends: [][]int32{nil}, cache: map[fragmentKey][]Token{}}
	model, _, err := v.model.Meta("tokenizer.ggml.model")
	if err != nil {
		return nil, err
	}
	if err := v.acquire(); err != nil {
		return nil, err
	}
	defer v.release()
	const splitAt = C.LLAMA_TOKEN_ATTR_CONTROL | C.LLAMA_TOKEN_ATTR_USER_DEFINED | C.LLAMA_TOKEN_ATTR_UNKNOWN
	for id := range v.n {
		attr := C.llama_vocab_get_attr(v.c, C.llama_token(id))
		if attr&splitAt == 0 {
			continue
		}
		t.specials = append(t.specials, special{
			id:      Token(id),
			text:    C.GoString(C.llama_vocab_get_text(v.c, C.llama_token(id))),
			control: attr&(C.LLAMA_TOKEN_ATTR_CONTROL|C.LLAMA_TOKEN_ATTR_UNKNOWN) != 0,
			lstrip:  attr&C.LLAMA_TOKEN_ATTR_LSTRIP != 0,
			rstrip:  attr&C.LLAMA_TOKEN_ATTR_RSTRIP != 0,
		})
	}
	vt := C.llama_vocab_type(v.c)
	switch {
	case !(model == "llama" && vt == C.LLAMA_VOCAB_TYPE_SPM) && !((model == "gpt2" || model == "gemma4") && vt == C.LLAMA_VOCAB_TYPE_BPE):
		t.why = fmt.Sprintf("tokenizer %q: its fragments are not known to tokenize on their own", model)
	default:
		t.fragmented, t.why = true, ""
		strips, edged := false, false
		for _, s := range t.specials {
			if s.text == "" {
				t.fragmented, t.why = false, fmt.Sprintf("special token %d has no text", s.id)
				break
			}
			strips = strips || s.lstrip || s.rstrip
			edged = edged || isSpace(s.text[0]) || isSpace(s.text[len(s.text)-1])
		}
		if t.fragmented && strips && edged {
			t.fragmented, t.why = false, "a special token's text begins or ends in whitespace, and another strips whitespace beside it"
		}
	}
	for i, s := range t.specials {
		node := int32(0)
		for j := 0; j < len(s.text); j++ {
			k := uint64(node)<<8 | uint64(s.text[j])
			next, ok := t.edges[k]
			if !ok {
				next = int32(len(t.ends))
				t.ends = append(t.ends, nil)
				t.edges[k] = next
			}
			node = next
		}
		t.ends[node] = append(t.ends[node], int32(i))
		if s.text != "" {
			t.first[s.text[0]] = true
		}
	}
	return t, nil
}

// Fragmented reports whether the split is done in Go (else every text goes to Vocab.Tokenize
// whole), and why not.
func (t *FragmentTokenizer) Fragmented() (bool, string) { return t.fragmented, t.why }

// SpecialTexts returns the texts of the special tokens the text is split at, in vocabulary
// order.
func (t *FragmentTokenizer) SpecialTexts() []string {
	out := make([]string, len(t.specials))
	for i, s := range t.specials {
		out[i] = s.text
	}
	return out
}

// isSpace is C's isspace in the "C" locale, as tokenizer_st_partition strips with it.
func isSpace(c byte) bool { return c == ' ' || (c >= '\t' && c <= '\r') }

// occurrence is a special token's text found in a text: [start, end).
type occurrence struct {
	start, end int
	special    int32
}

// occurrences lists where the specials' texts occur in text, by start; a special that matches
// only under parse_special is left out unless parseSpecial. ok is false when two of them
// overlap.
func (t *FragmentTokenizer) occurrences(text string, parseSpecial bool) (occ []occurrence, unparsed []occurrence, ok bool) {
	end := 0
	for i := 0; i < len(text); i++ {
		if !t.first[text[i]] {
			continue
		}
		node := int32(0)
		for j := i; j < len(text); j++ {
			next, found := t.edges[uint64(node)<<8|uint64(text[j])]
			if !found {
				break
			}
			node = next
			for _, s := range t.ends[node] {
				o := occurrence{start: i, end: j + 1, special: s}
				if !parseSpecial && t.specials[s].control {
					unparsed = append(unparsed, o)
					continue
				}
				if i < end {
					return nil, nil, false
				}
				end = o.end
				occ = append(occ, o)
			}
		}
	}
	return occ, unparsed, true
}

// HasSpecialText reports whether text holds the text of a control or unknown token: the
// tokens parse_special=false does not split at. Without one, Vocab.Tokenize(text, false, false)
// and (text, false, true) are the same tokens (tokenizer_st_partition splits both alike).
func (t *FragmentTokenizer) HasSpecialText(text string) bool {
	_, unparsed, _ := t.occurrences(text, false)
	return len(unparsed) > 0
}

// Tokenize returns Vocab.Tokenize(text, false, parseSpecial): the special tokens' ids where
// their texts occur, each plain fragment between them (whitespace stripped beside a token
// with lstrip or rstrip) tokenized on its own, from the cache where it was seen before.
// Errors are Vocab.Tokenize's.
func (t *FragmentTokenizer) Tokenize(text string, parseSpecial bool) ([]Token, error) {
	if !t.fragmented {
		return t.v.Tokenize(text, false, parseSpecial)
	}
	occ, unparsed, ok := t.occurrences(text, parseSpecial)
	if !ok {
		return t.v.Tokenize(text, false, parseSpecial)
	}
	out := []Token{}
	plain := func(from, to int, afterRstrip, beforeLstrip bool) error {
		if afterRstrip {
			for from < to && isSpace(text[from]) {
				from++
			}
		}
		if beforeLstrip {
			for to > from && isSpace(text[to-1]) {
				to--
			}
		}
		if from == to {
			return nil
		}
		held := false
		for _, u := range unparsed {
			held = held || (u.start < to && u.end > from)
		}
		toks, err := t.fragment(text[from:to], held)
		out = append(out, toks...)
		return err
	}
	at, rstrip := 0, false
	for _, o := range occ {
		s := t.specials[o.special]
		if err := plain(at, o.start, rstrip, s.lstrip); err != nil {
			return nil, err
		}
		out = append(out, s.id)
		at, rstrip = o.end, s.rstrip
	}
	if err := plain(at, len(text), rstrip, false); err != nil {
		return nil, err
	}
	return out, nil
}

// fragment tokenizes a plain fragment on its own, through the cache. unparsed: it holds a
// control token's text that parse_special=false leaves as text.
func (t *FragmentTokenizer) fragment(text string, unparsed bool) ([]Token, error) {
	key := fragmentKey{text, unparsed}
	t.mu.Lock()
	toks, ok := t.cache[key]
	t.mu.Unlock()
	if ok {
		return toks, nil
	}
	toks, err := t.v.Tokenize(text, false, !unparsed)
	if err != nil || len(text) > fragmentMaxBytes {
		return toks, err
	}
	t.mu.Lock()
	if t.bytes+len(text) > fragmentCacheBytes || len(t.cache) >= fragmentCacheEntries {
		clear(t.cache)
		t.bytes = 0
	}
	if _, ok := t.cache[key]; !ok {
		t.cache[key] = toks
		t.bytes += len(text)
	}
	t.mu.Unlock()
	return toks, nil
}
