package decide

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// Errors of a decision, testable with errors.Is. Start-up failures (Open, New) wrap the
// contract's slot and boundary errors instead.
var (
	// ErrPromptTooLong: the rendered prompt has more tokens than n_ctx. The *PromptTooLongError
	// carries both numbers.
	ErrPromptTooLong = backend.ErrPromptTooLong
	// ErrSpecialText: a message's content contains text that tokenizes as a special/control
	// token (e.g. "<end_of_turn>"), which would let row content rewrite the prompt's structure.
	ErrSpecialText = backend.ErrSpecialText
	// ErrNoTemplate: the model has no chat template in its metadata and none was given.
	ErrNoTemplate = backend.ErrNoTemplate
)

// PromptTooLongError reports a prompt that cannot fit the context (backend.PromptTooLongError).
type PromptTooLongError = backend.PromptTooLongError

// Options configure Open: the in-process backend's settings. The zero value of each field
// means its default.
type Options struct {
	// NGPULayers is n_gpu_layers: layers to offload to a GPU backend (-1 all, 0 none). It has
	// no effect in a CPU-only build.
	NGPULayers int
	// NCtx is n_ctx, the longest prompt in tokens (default 4096, capped at the model's
	// training context).
	NCtx int
	// NBatch is n_batch, the most tokens per llama_decode (default 512); longer prompts are
	// decoded in chunks.
	NBatch int
	// NThreads is n_threads (default: runtime.NumCPU()).
	NThreads int
	// Renderer is backend.RendererGo (default: Go Jinja, as transformers renders) or
	// backend.RendererLlama (llama.cpp's common/chat, as llama-server renders).
	Renderer string
	// ChatTemplate overrides the model's chat_template (Jinja source); "" uses the model's
	// tokenizer.chat_template metadata.
	ChatTemplate string
	// ChatTemplateKwargs are the chat_template_kwargs passed to the template as variables;
	// nil means {"enable_thinking": false}, the seed's default.
	ChatTemplateKwargs map[string]any
	// TemplateTime is the clock templates read (strftime_now, date_string); zero means today,
	// 00:00 UTC, taken once at Open. It is recorded in every Decision as template_date.
	TemplateTime time.Time
	// NoMmap reads the weights into memory instead of memory-mapping them (use_mmap=false).
	NoMmap bool
}

// DefaultKwargs returns the seed's chat_template_kwargs: {"enable_thinking": false}.
func DefaultKwargs() map[string]any { return backend.DefaultKwargs() }

// Decider decides rows under the direct contract on one backend. It is safe for concurrent
// use; on the in-process backend decisions are serialised on its one llama context, and
// results do not depend on the order they run in.
type Decider struct {
	b     backend.Backend
	slots contract.Slots
	check Check
}

// Open loads the model at path in-process (backend.OpenInProcess) and runs the start-up checks
// (see New). The Decider owns the backend: Close closes it.
func Open(path string, opts Options) (*Decider, error) {
	b, err := backend.OpenInProcess(path, backend.InProcessOptions{
		Options:  backend.Options{ChatTemplateKwargs: opts.ChatTemplateKwargs, TemplateTime: opts.TemplateTime},
		Renderer: opts.Renderer, ChatTemplate: opts.ChatTemplate, NGPULayers: opts.NGPULayers,
		NCtx: opts.NCtx, NBatch: opts.NBatch, NThreads: opts.NThreads, NoMmap: opts.NoMmap,
	})
	if err != nil {
		return nil, err
	}
	d, err := New(context.Background(), b)
	if err != nil {
		_ = b.Close()
		return nil, err
	}
	return d, nil
}

// New runs the start-up checks on a backend and returns a Decider that owns it: the sixteen
// answer slots resolve (single, unique, round-tripping tokens) and the boundary holds on a
// rendered sample prompt. A model that fails is refused: the error wraps the contract error
// (contract.ErrSlotNotSingleToken, ErrSlotCollision, ErrSlotRoundTrip, ErrBoundary), or the
// backend's error (render.ErrTemplate, backend.ErrHTTP, ...). On error the caller still owns b.
func New(ctx context.Context, b backend.Backend) (*Decider, error) {
	d := &Decider{b: b}
	tok := backend.Tokenizer(ctx, b)
	var err error
	if d.slots, err = contract.ResolveSlots(tok); err != nil {
		return nil, fmt.Errorf("the model fails the start-up checks: %w", err)
	}
	sample, err := d.Render(ctx, SampleRow())
	if err != nil {
		return nil, fmt.Errorf("rendering the sample prompt: %w", err)
	}
	if _, err := contract.VerifyBoundary(tok, sample.Text, d.slots); err != nil {
		return nil, fmt.Errorf("the model fails the start-up checks: %w", err)
	}
	slots, err := d.slotInfo(ctx)
	if err != nil {
		return nil, err
	}
	d.check = Check{Backend: b.Name(), Renderer: b.Renderer(), Slots: slots, SamplePromptSHA256: sample.SHA256,
		SampleTokens: sample.NTokens, BoundaryHolds: true, TemplateDate: TemplateDate(b.TemplateTime())}
	if ip, ok := b.(*backend.InProcess); ok {
		d.check.TemplateSHA256 = ip.TemplateSHA256()
	}
	return d, nil
}

// TemplateDate formats the template clock as recorded in results: "2006-01-02" when it is a
// midnight, RFC 3339 otherwise.
func TemplateDate(t time.Time) string {
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339)
}

// Close closes the backend. It is idempotent.
func (d *Decider) Close() error { return d.b.Close() }

// Backend returns the backend the Decider runs on.
func (d *Decider) Backend() backend.Backend { return d.b }

// Slots returns the answer slots resolved at start-up.
func (d *Decider) Slots() contract.Slots { return d.slots }

// Prompt is a rendered decision prompt.
type Prompt struct {
	Text    string  // the prompt text the model reads
	SHA256  string  // contract.PromptSHA256(Text)
	Tokens  []int32 // its tokens (add_special=false, parse_special=true)
	NTokens int     // len(Tokens)
}

// Render renders a row's direct-contract prompt through the chat template and tokenizes it,
// without the boundary check or decoding (jev render). Errors: option count errors,
// ErrSpecialText, render errors, backend errors.
func (d *Decider) Render(ctx context.Context, row contract.Row) (Prompt, error) {
	msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
	if err != nil {
		return Prompt{}, err
	}
	text, err := d.renderText(ctx, msgs)
	if err != nil {
		return Prompt{}, err
	}
	toks, err := d.b.Tokenize(ctx, text, true)
	if err != nil {
		return Prompt{}, err
	}
	return newPrompt(text, toks), nil
}

func newPrompt(text string, toks []int32) Prompt {
	return Prompt{Text: text, SHA256: contract.PromptSHA256(text), Tokens: toks, NTokens: len(toks)}
}

// renderText checks the messages' content for special-token text and renders them.
func (d *Decider) renderText(ctx context.Context, msgs []contract.ChatMessage) (string, error) {
	for _, m := range msgs {
		if err := backend.CheckSpecialText(ctx, d.b, m.Content); err != nil {
			return "", fmt.Errorf("%w in the %s message", err, m.Role)
		}
	}
	return d.b.Render(ctx, msgs)
}

// Decision is the result of one direct decision, one JSON object per output line.
type Decision struct {
	ID            json.RawMessage        `json:"id"`
	PromptVersion string                 `json:"prompt_version"`
	PromptSHA256  string                 `json:"prompt_sha256"`
	NPromptTokens int                    `json:"n_prompt_tokens"`
	Chosen        string                 `json:"chosen"`
	ChosenLetter  string                 `json:"chosen_letter"`
	Options       []contract.OptionScore `json:"options"`
	Label         string                 `json:"label,omitempty"`
	Correct       *bool                  `json:"correct,omitempty"`
	// Backend is "in-process" or the server URL; Renderer "go", "llama" or "server".
	Backend  string `json:"backend"`
	Renderer string `json:"renderer"`
	// TemplateDate is the clock the template read (see TemplateDate); rerun with
	// --template-date set to it to reproduce prompt_sha256.
	TemplateDate string  `json:"template_date"`
	MS           float64 `json:"ms"`
}

// Decide runs one row through the direct contract: render → tokenize → boundary check →
// next-token read-out of the listed options' letters at the last position → softmax over the
// listed options → the chosen option. Errors are per row: contract.ErrBoundary,
// ErrPromptTooLong, ErrSpecialText, option-count errors, backend errors; a cancelled ctx
// returns an error wrapping ctx.Err().
func (d *Decider) Decide(ctx context.Context, row contract.Row) (*Decision, error) {
	start := time.Now()
	msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
	if err != nil {
		return nil, err
	}
	text, err := d.renderText(ctx, msgs)
	if err != nil {
		return nil, err
	}
	// The boundary check tokenizes the prompt anyway and returns its tokens.
	toks, err := contract.VerifyBoundary(backend.Tokenizer(ctx, d.b), text, d.slots)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("decide: %w", err)
	}
	prompt := newPrompt(text, toks)
	readout, err := d.b.NextToken(ctx, prompt.Tokens, d.slots[:len(row.Options)])
	if err != nil {
		return nil, err
	}
	scores, chosen := contract.ScoreReadout(readout.Logprobs, readout.Logits, d.slots, row.Options)
	dec := &Decision{
		ID:            row.IDJSON(),
		PromptVersion: contract.PromptVersion,
		PromptSHA256:  prompt.SHA256,
		NPromptTokens: prompt.NTokens,
		Chosen:        scores[chosen].ID,
		ChosenLetter:  scores[chosen].Letter,
		Options:       scores,
		Label:         row.Label,
		Backend:       d.b.Name(),
		Renderer:      d.b.Renderer(),
		TemplateDate:  d.check.TemplateDate,
	}
	if row.Label != "" {
		ok := dec.Chosen == row.Label
		dec.Correct = &ok
	}
	dec.MS = float64(time.Since(start).Microseconds()) / 1000
	return dec, nil
}
