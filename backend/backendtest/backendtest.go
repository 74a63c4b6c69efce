// Package backendtest provides a runtime for testing code that holds a gojev.Decider without a
// model, as net/http/httptest does for HTTP handlers: no weights, no cgo, logits the test
// writes. A Decider runs its start-up checks, scheduling, scoring, bias control, calibration
// and the knockout over it exactly as over llama.cpp.
package backendtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// Scripted is a backend.Backend without a model. Its vocabulary is the 256 byte values: text
// tokenizes to one token per byte. It renders chat messages as "role: content\n" lines
// followed by "assistant: ", so the answer letters of the direct contracts are single tokens
// and their boundary holds; the binary contract's yes/no words are not single tokens, so a
// Decider under it fails its start-up checks. At the end of a direct prompt the letter of each
// listed option scores Scores[its description] + Bias[its letter] (a missing description
// scores 0), and Bias[its letter] alone when the evidence is one of contextual calibration's
// content-free inputs (debias.ContentFreeEvidence: the prompt has no content); every other token, and every token of a prompt whose user message is not a
// direct payload, scores 0. Readout.Decoded is the whole prompt (no prefix reuse).
//
// Delay makes every NextToken take that long, as a decode does (a cancelled context ends it
// early), for tests of what waits on decodes: admission, deadlines, draining. NCtx, when not 0,
// is the longest prompt in tokens: a longer one is refused by CheckPrompt, as an in-process
// runtime refuses a prompt longer than n_ctx, before it is queued.
//
// Embeddings make it a backend.Embedder: a prompt's hidden state is Embeddings[the longest
// key that the prompt holds between double quotes] (an error when none does).
//
// Its methods keep no state, so a Scripted is safe for concurrent use; set its fields before
// the Decider is made.
type Scripted struct {
	Scores     map[string]float64
	Bias       map[byte]float64
	Delay      time.Duration
	NCtx       int
	Embeddings map[string][]float32
}

// Embed returns the Embeddings entry of the longest key the prompt holds in double quotes.
func (s *Scripted) Embed(ctx context.Context, prompt []int32) ([]float32, int, error) {
	text, _ := s.Detokenize(ctx, prompt)
	best, ok := "", false
	for k := range s.Embeddings {
		if strings.Contains(text, `"`+k+`"`) && (!ok || len(k) > len(best)) {
			best, ok = k, true
		}
	}
	if !ok {
		return nil, 0, fmt.Errorf("scripted: no embedding for %q", text)
	}
	return slices.Clone(s.Embeddings[best]), len(prompt), nil
}

var (
	_ backend.Backend       = (*Scripted)(nil)
	_ backend.PromptChecker = (*Scripted)(nil)
)

// CheckPrompt refuses an empty prompt and, when NCtx is set, one of more than NCtx tokens
// (*backend.PromptTooLongError).
func (s *Scripted) CheckPrompt(tokens []int32) error {
	switch {
	case len(tokens) == 0:
		return contract.ErrEmptyPrompt
	case s.NCtx > 0 && len(tokens) > s.NCtx:
		return &backend.PromptTooLongError{NTokens: len(tokens), NCtx: s.NCtx}
	}
	return nil
}

// Name is "scripted".
func (s *Scripted) Name() string { return "scripted" }

// Renderer is "scripted".
func (s *Scripted) Renderer() string { return "scripted" }

// Render writes each message as "role: content\n", then "assistant: ".
func (s *Scripted) Render(_ context.Context, msgs []contract.ChatMessage) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	return b.String() + "assistant: ", nil
}

// Tokenize returns one token per byte of text.
func (s *Scripted) Tokenize(_ context.Context, text string, _ bool) ([]int32, error) {
	out := make([]int32, len(text))
	for i := range len(text) {
		out[i] = int32(text[i])
	}
	return out, nil
}

// Detokenize returns the bytes the tokens stand for.
func (s *Scripted) Detokenize(_ context.Context, toks []int32) (string, error) {
	b := make([]byte, len(toks))
	for i, t := range toks {
		b[i] = byte(t)
	}
	return string(b), nil
}

// NextToken reads the scripted logits at the prompt's end for ids: logits as written,
// log-probabilities their log-softmax over the 256 tokens.
func (s *Scripted) NextToken(ctx context.Context, prompt, ids []int32) (backend.Readout, error) {
	if s.Delay > 0 {
		t := time.NewTimer(s.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return backend.Readout{}, ctx.Err()
		}
	}
	if err := s.CheckPrompt(prompt); err != nil {
		return backend.Readout{}, err
	}
	logits := make([]float64, 256)
	text, _ := s.Detokenize(ctx, prompt)
	i := strings.Index(text, "user: ")
	j := strings.LastIndex(text, "\nassistant: ")
	var payload struct {
		Evidence json.RawMessage
		Options  []struct{ Letter, Description string }
	}
	if i >= 0 && j > i && json.Unmarshal([]byte(text[i+len("user: "):j]), &payload) == nil {
		content := true
		for _, ev := range debias.ContentFreeEvidence {
			if b, _ := json.Marshal(ev); string(payload.Evidence) == string(b) {
				content = false // contextual calibration's content-free input: no content to score
			}
		}
		for _, o := range payload.Options {
			if o.Letter != "" {
				logits[o.Letter[0]] = s.Bias[o.Letter[0]]
				if content {
					logits[o.Letter[0]] += s.Scores[o.Description]
				}
			}
		}
	}
	m := slices.Max(logits)
	total := 0.0
	for _, v := range logits {
		total += math.Exp(v - m)
	}
	r := backend.Readout{Decoded: len(prompt)}
	for _, id := range ids {
		if id < 0 || id > 255 {
			return backend.Readout{}, fmt.Errorf("backendtest: token id %d is not a byte", id)
		}
		r.Logits = append(r.Logits, logits[id])
		r.Logprobs = append(r.Logprobs, logits[id]-m-math.Log(total))
	}
	return r, nil
}

// TemplateTime is the zero time: Scripted's template reads no clock.
func (s *Scripted) TemplateTime() time.Time { return time.Time{} }

// Close does nothing.
func (s *Scripted) Close() error { return nil }
