// Package backend holds the runtimes a gojev.Decider runs on, as database/sql/driver holds what
// sql.DB runs on: llama.cpp in this process (InProcess, built with cgo only) or a llama-server
// over HTTP (HTTP, the seed's RuntimeClient; builds with CGO_ENABLED=0). Both give the Decider
// the same operations (Backend), so the same checks, scheduling, scoring and bias control run
// on either, and a run on one can be compared with a run on the other (jev parity).
package backend

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gojev/gojev/contract"
)

// Backend is what a gojev.Decider needs from a runtime. Implementations are safe for
// concurrent use; the Decider calls NextToken from one goroutine, prompts in the order of their
// tokens, so a runtime that keeps the previous prompt (InProcess) reuses the longest prefix.
type Backend interface {
	// Name says which backend decides: "in-process" or the server's base URL.
	Name() string
	// Renderer names the chat-template path that renders prompts: "go" (package render),
	// "llama" (llama.cpp's common/chat in-process) or "server" (/apply-template).
	Renderer() string
	// Render renders the messages through the chat template with add_generation_prompt=true
	// and the backend's chat_template_kwargs and template clock.
	Render(ctx context.Context, messages []contract.ChatMessage) (string, error)
	// Tokenize tokenizes text without adding BOS/EOS (add_special=false); parseSpecial is
	// llama_tokenize's parse_special (special-token text becomes control tokens).
	Tokenize(ctx context.Context, text string, parseSpecial bool) ([]int32, error)
	// Detokenize turns tokens back into text, rendering special tokens as text
	// (llama_detokenize with unparse_special=true, as /detokenize does).
	Detokenize(ctx context.Context, tokens []int32) (string, error)
	// NextToken decodes the prompt tokens and reads the next-token distribution at the last
	// position for the given token ids.
	NextToken(ctx context.Context, prompt []int32, ids []int32) (Readout, error)
	// TemplateTime is the clock templates read (strftime_now, date_string); see Options.
	TemplateTime() time.Time
	// Close releases the backend's resources. It is idempotent.
	Close() error
}

// ModelInfo describes the model file a runtime loaded itself (an in-process runtime; Modeler).
type ModelInfo struct {
	Path   string `json:"path"`
	Name   string `json:"name,omitempty"` // general.name
	Desc   string `json:"desc,omitempty"` // llama_model_desc: architecture, size and type
	NVocab int    `json:"n_vocab"`
}

// Modeler is a runtime that loaded a model file itself (InProcess); a server's runtime is not.
type Modeler interface {
	ModelInfo() ModelInfo
}

// DeviceLister is a runtime that names the devices that decide and the plugins loaded
// (InProcess.Devices); a runtime without it (HTTP) does not say.
type DeviceLister interface {
	Devices() (devices, plugins []string)
}

// PromptChecker is a runtime that can tell, before decoding, that a prompt cannot be decoded
// (InProcess.CheckPrompt: empty, or longer than n_ctx). The Decider asks it while preparing a
// row, so that such a prompt is refused before it is queued, and never reaches a packed
// decode it would fail whole.
type PromptChecker interface {
	CheckPrompt(tokens []int32) error
}

// Embedder is a runtime that reads a prompt's hidden state (InProcess.Embed): the last
// layer's output at the prompt's last position, n_embd floats, with how many of its tokens it
// decoded. A runtime without it (HTTP) cannot rank options by embedding.
type Embedder interface {
	Embed(ctx context.Context, prompt []int32) ([]float32, int, error)
}

// Packer is a runtime that can decode several prompts in one llama_decode (InProcess under
// DecodePacked). The Decider hands it a round's prompts in the order of their tokens.
type Packer interface {
	// DecodeMode is DecodeOneSequence or DecodePacked.
	DecodeMode() string
	// PackSeqs is the most prompts one NextTokens call decodes together.
	PackSeqs() int
	// NextTokens decodes prompts (at most PackSeqs) together and reads ids[i] at the last
	// position of prompts[i], as NextToken does for one.
	NextTokens(ctx context.Context, prompts [][]int32, ids [][]int32) ([]Readout, error)
}

// Readout is the next-token distribution at a prompt's last position, for the requested ids.
type Readout struct {
	// Logprobs[i] is log-softmax over the full vocabulary of ids[i]'s logit (natural log).
	Logprobs []float64
	// Logits[i] is ids[i]'s raw logit; nil when the backend cannot see raw logits (HTTP).
	Logits []float64
	// Decoded is how many of the prompt's tokens this call decoded: in-process, the tokens
	// after the prefix reused from the KV cache; over HTTP, len(prompt) (the server's own
	// prompt cache is not visible).
	Decoded int
	// Embedding is the hidden state at the prompt's last position when the prompt was read
	// for it (Embedder.Embed: n_embd floats; Logprobs and Logits are then nil), else nil.
	Embedding []float32
}

// Options shared by both backends.
type Options struct {
	// ChatTemplateKwargs are the chat_template_kwargs passed to every render; nil means the
	// seed's {"enable_thinking": false}.
	ChatTemplateKwargs map[string]any
	// TemplateTime is the clock the template reads (strftime_now, date_string). The zero value
	// means today, 00:00 UTC, taken once when the backend opens, so that one run renders every
	// prompt with one date, and a rerun with that date pinned renders the same prompts. A
	// server renders /apply-template with its own wall clock, which cannot be pinned.
	TemplateTime time.Time
}

// DefaultKwargs returns the seed's chat_template_kwargs: {"enable_thinking": false}.
func DefaultKwargs() map[string]any { return map[string]any{"enable_thinking": false} }

func (o Options) kwargs() map[string]any {
	if o.ChatTemplateKwargs == nil {
		return DefaultKwargs()
	}
	return o.ChatTemplateKwargs
}

func (o Options) clock() time.Time {
	if o.TemplateTime.IsZero() {
		y, m, d := time.Now().UTC().Date()
		return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	}
	return o.TemplateTime
}

// ErrMissingTokens is wrapped by *MissingTokensError.
var ErrMissingTokens = errors.New("backend: token ids missing from the server's top log-probabilities")

// MissingTokensError reports ids whose log-probability the server did not return (they were
// not among the top n_probs even at the largest n_probs asked). No value is invented for them.
type MissingTokensError struct {
	URL    string
	IDs    []int32
	NProbs int
}

func (e *MissingTokensError) Error() string {
	return fmt.Sprintf("%s/completion: token ids %v not among the top %d log-probabilities", e.URL, e.IDs, e.NProbs)
}

func (e *MissingTokensError) Unwrap() error { return ErrMissingTokens }

// Tokenizer adapts a Backend (or any SpecialTokenizer) to contract.Tokenizer
// (add_special=false, parse_special=true, as the seed's /tokenize calls) for the start-up
// checks, under one context.
func Tokenizer(ctx context.Context, b SpecialTokenizer) contract.Tokenizer { return tokenizer{ctx, b} }

type tokenizer struct {
	ctx context.Context
	b   SpecialTokenizer
}

func (t tokenizer) Tokenize(text string) ([]int32, error) { return t.b.Tokenize(t.ctx, text, true) }
func (t tokenizer) Detokenize(tokens []int32) (string, error) {
	return t.b.Detokenize(t.ctx, tokens)
}
