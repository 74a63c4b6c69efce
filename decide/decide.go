package decide

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

// Errors of a decision, testable with errors.Is. Start-up failures (Open) wrap the contract's
// slot and boundary errors instead.
var (
	// ErrPromptTooLong: the rendered prompt has more tokens than n_ctx. The *PromptTooLongError
	// carries both numbers.
	ErrPromptTooLong = errors.New("decide: prompt longer than n_ctx")
	// ErrSpecialText: a message's content contains text that tokenizes as a special/control
	// token (e.g. "<end_of_turn>"), which would let row content rewrite the prompt's structure.
	ErrSpecialText = errors.New("content contains special-token text")
	// ErrNoTemplate: the model has no chat template in its metadata and none was given.
	ErrNoTemplate = errors.New("decide: no chat template")
)

// PromptTooLongError reports a prompt that cannot fit the context: NTokens > NCtx. NCtxTrain
// is the model's training context, the most NCtx can be raised to.
type PromptTooLongError struct{ NTokens, NCtx, NCtxTrain int }

func (e *PromptTooLongError) Error() string {
	msg := fmt.Sprintf("prompt has %d tokens, more than n_ctx=%d", e.NTokens, e.NCtx)
	switch {
	case e.NCtxTrain > e.NCtx:
		msg += fmt.Sprintf(" (raise n_ctx, jev -c, up to the model's %d)", e.NCtxTrain)
	case e.NCtxTrain > 0:
		msg += " (the model's training context; it cannot take a longer prompt)"
	}
	return msg
}

func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }

// Options configure a Decider. The zero value of each field means its default.
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
	// ChatTemplate overrides the model's chat_template (Jinja source); "" uses the model's
	// tokenizer.chat_template metadata.
	ChatTemplate string
	// ChatTemplateKwargs are the chat_template_kwargs passed to the template as variables;
	// nil means {"enable_thinking": false}, the seed's default.
	ChatTemplateKwargs map[string]any
	// TemplateTime is the clock the template's strftime_now reads; zero means time.Now() at
	// each render.
	TemplateTime time.Time
	// NoMmap reads the weights into memory instead of memory-mapping them (use_mmap=false).
	NoMmap bool
}

// DefaultKwargs returns the seed's chat_template_kwargs: {"enable_thinking": false}.
func DefaultKwargs() map[string]any { return map[string]any{"enable_thinking": false} }

// Decider decides rows with one loaded model under the direct contract. It is safe for
// concurrent use: decisions are serialised on its one llama context, and results do not
// depend on the order they run in.
type Decider struct {
	mu     sync.Mutex
	model  *llama.Model
	lctx   *llama.Context
	batch  *llama.Batch
	tmpl   *render.Template
	tok    vocabTokenizer
	slots  contract.Slots
	render render.Options
	nCtx   int
	nBatch int
	// nCtxTrain is the model's training context (the most n_ctx may be).
	nCtxTrain int
	check     Check
	cached    []llama.Token // the tokens of sequence 0 now in the KV cache, guarded by mu
}

// Open loads the model at path, prepares its chat template and runs the start-up checks:
// the sixteen answer slots resolve (single, unique, round-tripping tokens) and the boundary
// holds on a rendered sample prompt. A model that fails is refused: the error wraps the
// contract error (contract.ErrSlotNotSingleToken, ErrSlotCollision, ErrSlotRoundTrip,
// ErrBoundary), llama.ErrLoad for unusable files, ErrNoTemplate or render.ErrTemplate.
func Open(path string, opts Options) (*Decider, error) {
	mp := llama.DefaultModelParams()
	mp.NGPULayers = opts.NGPULayers
	mp.UseMmap = !opts.NoMmap
	model, err := llama.LoadModel(path, mp)
	if err != nil {
		return nil, err
	}
	d, err := newDecider(model, opts)
	if err != nil {
		_ = model.Close()
		return nil, err
	}
	return d, nil
}

func newDecider(model *llama.Model, opts Options) (*Decider, error) {
	d := &Decider{model: model, tok: vocabTokenizer{model.Vocab()}}
	source := opts.ChatTemplate
	if source == "" {
		s, ok, err := model.ChatTemplate("")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s has no tokenizer.chat_template; set Options.ChatTemplate (jev: --chat-template-file)", ErrNoTemplate, model.Path())
		}
		source = s
	}
	tmpl, err := render.Parse(source)
	if err != nil {
		return nil, err
	}
	d.tmpl = tmpl
	bos, err := model.Vocab().BOSText()
	if err != nil {
		return nil, err
	}
	eos, err := model.Vocab().EOSText()
	if err != nil {
		return nil, err
	}
	kwargs := opts.ChatTemplateKwargs
	if kwargs == nil {
		kwargs = DefaultKwargs()
	}
	d.render = render.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos, Kwargs: kwargs, Now: opts.TemplateTime}

	if d.slots, err = contract.ResolveSlots(d.tok); err != nil {
		return nil, fmt.Errorf("the model fails the start-up checks: %w", err)
	}
	sample, err := d.Render(SampleRow())
	if err != nil {
		return nil, fmt.Errorf("rendering the sample prompt: %w", err)
	}
	if _, err := contract.VerifyBoundary(d.tok, sample.Text, d.slots); err != nil {
		return nil, fmt.Errorf("the model fails the start-up checks: %w", err)
	}
	d.check = Check{Slots: d.slotInfo(), TemplateSHA256: tmpl.SHA256(), SamplePromptSHA256: sample.SHA256,
		SampleTokens: sample.NTokens, BoundaryHolds: true}

	nCtx := opts.NCtx
	if nCtx == 0 {
		nCtx = 4096
	}
	train, err := model.NCtxTrain()
	if err != nil {
		return nil, err
	}
	if train > 0 && nCtx > train {
		slog.Warn("n_ctx exceeds the model's training context; using that", "n_ctx", nCtx, "n_ctx_train", train)
		nCtx = train
	}
	nBatch := opts.NBatch
	if nBatch == 0 {
		nBatch = 512
	}
	nBatch = min(nBatch, nCtx)
	lctx, err := llama.NewContext(model, llama.ContextParams{NCtx: nCtx, NBatch: nBatch, NUBatch: nBatch, NSeqMax: 1, NThreads: opts.NThreads})
	if err != nil {
		return nil, err
	}
	batch, err := llama.NewBatch(nBatch, 1)
	if err != nil {
		_ = lctx.Close()
		return nil, err
	}
	d.lctx, d.batch, d.nCtx, d.nBatch, d.nCtxTrain = lctx, batch, lctx.NCtx(), nBatch, train
	return d, nil
}

// Close frees the batch, the context and the model, in that order. It is idempotent.
func (d *Decider) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.batch != nil {
		_ = d.batch.Close()
		_ = d.lctx.Close()
		_ = d.model.Close()
		d.batch, d.lctx = nil, nil
	}
	return nil
}

// Model returns the loaded model.
func (d *Decider) Model() *llama.Model { return d.model }

// NCtx returns the n_ctx in force.
func (d *Decider) NCtx() int { return d.nCtx }

// Slots returns the answer slots resolved at start-up.
func (d *Decider) Slots() contract.Slots { return d.slots }

// Prompt is a rendered decision prompt.
type Prompt struct {
	Text    string        // the prompt text the model reads
	SHA256  string        // contract.PromptSHA256(Text)
	Tokens  []llama.Token // its tokens (add_special=false, parse_special=true)
	NTokens int           // len(Tokens)
}

// Render renders a row's direct-contract prompt through the chat template and tokenizes it,
// without the boundary check or decoding (jev render). Errors: contract.ErrRow-style option
// count errors, ErrSpecialText, render errors.
func (d *Decider) Render(row contract.Row) (Prompt, error) {
	msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
	if err != nil {
		return Prompt{}, err
	}
	text, err := d.renderText(msgs)
	if err != nil {
		return Prompt{}, err
	}
	toks, err := d.tok.Tokenize(text)
	if err != nil {
		return Prompt{}, err
	}
	return newPrompt(text, toks), nil
}

func newPrompt(text string, toks []llama.Token) Prompt {
	return Prompt{Text: text, SHA256: contract.PromptSHA256(text), Tokens: toks, NTokens: len(toks)}
}

// renderText checks the messages' content for special-token text and renders them.
func (d *Decider) renderText(msgs []contract.ChatMessage) (string, error) {
	rm := make([]render.Message, len(msgs))
	for i, m := range msgs {
		if err := d.checkSpecialText(m.Content); err != nil {
			return "", fmt.Errorf("%w in the %s message", err, m.Role)
		}
		rm[i] = render.Message{Role: m.Role, Content: m.Content}
	}
	return d.tmpl.Render(rm, d.render)
}

// checkSpecialText refuses content whose tokens change when special-token text is parsed:
// such text would become control tokens inside the rendered prompt (an injection path).
func (d *Decider) checkSpecialText(content string) error {
	v := d.model.Vocab()
	plain, err := v.Tokenize(content, false, false)
	if err != nil {
		return err
	}
	special, err := v.Tokenize(content, false, true)
	if err != nil {
		return err
	}
	if slices.Equal(plain, special) {
		return nil
	}
	// Name the special token: the one whose text disappears when special tokens are not
	// rendered (llama_token_to_piece with special=false gives "" for control tokens).
	for _, t := range special {
		shown, err1 := v.TokenToPiece(t, true)
		hidden, err2 := v.TokenToPiece(t, false)
		if err1 == nil && err2 == nil && shown != hidden {
			return fmt.Errorf("%w %q", ErrSpecialText, shown)
		}
	}
	return ErrSpecialText
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
	MS            float64                `json:"ms"`
}

// Decide runs one row through the direct contract: render → tokenize → boundary check →
// decode → the letter logits at the last position → softmax over the listed options → the
// chosen option. Errors are per row: contract.ErrBoundary, ErrPromptTooLong, ErrSpecialText,
// option-count errors, llama decode errors; a cancelled ctx returns an error wrapping
// ctx.Err().
func (d *Decider) Decide(ctx context.Context, row contract.Row) (*Decision, error) {
	start := time.Now()
	msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
	if err != nil {
		return nil, err
	}
	text, err := d.renderText(msgs)
	if err != nil {
		return nil, err
	}
	// The boundary check tokenizes the prompt anyway and returns its tokens.
	toks, err := contract.VerifyBoundary(d.tok, text, d.slots)
	if err != nil {
		return nil, err
	}
	prompt := newPrompt(text, toks)
	logits, err := d.nextTokenLogits(ctx, prompt.Tokens)
	if err != nil {
		return nil, err
	}
	scores, chosen := contract.ScoreDirect(logits, d.slots, row.Options)
	dec := &Decision{
		ID:            row.IDJSON(),
		PromptVersion: contract.PROMPT_VERSION,
		PromptSHA256:  prompt.SHA256,
		NPromptTokens: prompt.NTokens,
		Chosen:        scores[chosen].ID,
		ChosenLetter:  scores[chosen].Letter,
		Options:       scores,
		Label:         row.Label,
	}
	if row.Label != "" {
		ok := dec.Chosen == row.Label
		dec.Correct = &ok
	}
	dec.MS = float64(time.Since(start).Microseconds()) / 1000
	return dec, nil
}

// nextTokenLogits decodes tokens as sequence 0 and returns the logits after the last one.
//
// Tokens that the previous prompt left in the KV cache and that this prompt starts with (the
// system prompt and the template's head, typically) are not decoded again: the cache is cut
// back to the common prefix and only the rest is decoded, in chunks of ≤ n_batch tokens. At
// least two tokens are always decoded, so no batch is a single token. Without flash attention,
// this gives bit-identical logits to decoding the whole prompt (a test checks it).
func (d *Decider) nextTokenLogits(ctx context.Context, tokens []llama.Token) ([]float32, error) {
	if len(tokens) > d.nCtx {
		return nil, &PromptTooLongError{NTokens: len(tokens), NCtx: d.nCtx, NCtxTrain: d.nCtxTrain}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lctx == nil {
		return nil, llama.ErrClosed
	}
	keep := max(0, min(commonPrefix(d.cached, tokens), len(tokens)-2))
	if keep < len(d.cached) {
		if ok, err := d.lctx.SeqRm(0, keep, -1); err != nil || !ok {
			keep = 0
			if err := d.lctx.MemoryClear(); err != nil {
				return nil, err
			}
		}
	}
	d.cached = d.cached[:keep]
	last := 0
	for _, span := range chunks(len(tokens)-keep, d.nBatch) {
		d.batch.Clear()
		for i := keep + span[0]; i < keep+span[1]; i++ {
			row, err := d.batch.Add(tokens[i], i, []int{0}, i == len(tokens)-1)
			if err != nil {
				return nil, err
			}
			last = row
		}
		if err := d.lctx.Decode(ctx, d.batch); err != nil {
			// The cache may hold part of this prompt: forget it all.
			d.cached = d.cached[:0]
			_ = d.lctx.MemoryClear()
			return nil, err
		}
		d.cached = append(d.cached, tokens[keep+span[0]:keep+span[1]]...)
	}
	return d.lctx.Logits(last)
}

func commonPrefix(a, b []llama.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// chunks splits n tokens into [start, end) spans of at most size tokens, of near-equal
// length. Equal spans avoid a final one-token batch: llama.cpp's CPU backend decodes a single
// token through a different matrix-vector path, whose logits differ from the batched path's
// (measured: up to 0.35 in a logit on SmolLM2-135M), while any split into spans of two or more
// tokens gives identical logits.
func chunks(n, size int) [][2]int {
	if n == 0 {
		return nil
	}
	count := (n + size - 1) / size
	spans := make([][2]int, 0, count)
	for k := range count {
		spans = append(spans, [2]int{k * n / count, (k + 1) * n / count})
	}
	return spans
}

// vocabTokenizer adapts a llama.Vocab to contract.Tokenizer: add_special=false,
// parse_special=true, as the seed's /tokenize call; detokenize renders special tokens as
// llama-server's /detokenize does.
type vocabTokenizer struct{ v *llama.Vocab }

func (t vocabTokenizer) Tokenize(text string) ([]int32, error) {
	return t.v.Tokenize(text, false, true)
}

func (t vocabTokenizer) Detokenize(tokens []int32) (string, error) {
	return t.v.Detokenize(tokens, false, true)
}
