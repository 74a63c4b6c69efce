package backend

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
)

// Renderer names accepted by InProcessOptions.Renderer.
const (
	RendererGo     = "go"     // package render: Go Jinja, byte-identical to transformers' Python Jinja2
	RendererLlama  = "llama"  // llama.Template: llama.cpp's common/chat, as llama-server renders
	RendererServer = "server" // the server's /apply-template (HTTP backend only)
)

// InProcessOptions configure an InProcess backend. The zero value of each field means its
// default.
type InProcessOptions struct {
	Options
	// Renderer is RendererGo (default) or RendererLlama.
	Renderer string
	// ChatTemplate overrides the model's tokenizer.chat_template (Jinja source).
	ChatTemplate string
	// NGPULayers is n_gpu_layers (-1 all, 0 none); no effect in a CPU-only build.
	NGPULayers int
	// NCtx is n_ctx (default 4096, capped at the model's n_ctx_train).
	NCtx int
	// NBatch is n_batch, the most tokens per llama_decode (default 512).
	NBatch int
	// NThreads is n_threads (default: runtime.NumCPU()).
	NThreads int
	// NoMmap reads the weights into memory (use_mmap=false).
	NoMmap bool
	// NoPrefixReuse decodes every prompt whole, clearing the KV cache first, as a runtime
	// without prompt caching would (jev bench's sequential baseline).
	NoPrefixReuse bool
}

// InProcess runs the contract on llama.cpp in this process: one model, one llama context with
// one sequence, decisions serialised on a mutex. The tokens of the previous prompt stay in the
// KV cache, and the next prompt decodes only what follows their common prefix (bit-identical
// logits, see NextToken).
type InProcess struct {
	mu        sync.Mutex
	model     *llama.Model
	lctx      *llama.Context
	batch     *llama.Batch
	tmpl      *Template
	noReuse   bool
	nCtx      int
	nBatch    int
	nCtxTrain int
	cached    []llama.Token // tokens of sequence 0 now in the KV cache, guarded by mu
}

// ErrNoTemplate: the model has no chat template in its metadata and none was given.
var ErrNoTemplate = fmt.Errorf("backend: no chat template")

// OpenInProcess loads the model at path (llama_model_load_from_file, validated first by package
// gguf), compiles its chat template with the chosen renderer and creates a context
// (llama_init_from_model, flash attention off). Errors wrap llama.ErrLoad, ErrNoTemplate,
// render.ErrTemplate or llama.ErrContext.
func OpenInProcess(path string, opts InProcessOptions) (*InProcess, error) {
	return llama.OpenWith(path, opts.NGPULayers, opts.NoMmap, func(m *llama.Model) (*InProcess, error) {
		return newInProcess(m, opts)
	})
}

func newInProcess(model *llama.Model, opts InProcessOptions) (*InProcess, error) {
	tmpl, err := NewTemplate(model, TemplateOptions{Options: opts.Options, Renderer: opts.Renderer, ChatTemplate: opts.ChatTemplate})
	if err != nil {
		return nil, err
	}
	b := &InProcess{model: model, tmpl: tmpl, noReuse: opts.NoPrefixReuse}

	nCtx := opts.NCtx
	if nCtx == 0 {
		nCtx = 4096
	}
	train, err := model.NCtxTrain()
	if err != nil {
		b.closeTemplates()
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
		b.closeTemplates()
		return nil, err
	}
	batch, err := llama.NewBatch(nBatch, 1)
	if err != nil {
		_ = lctx.Close()
		b.closeTemplates()
		return nil, err
	}
	b.lctx, b.batch, b.nCtx, b.nBatch, b.nCtxTrain = lctx, batch, lctx.NCtx(), nBatch, train
	return b, nil
}

func (b *InProcess) closeTemplates() { _ = b.tmpl.Close() }

// Name returns "in-process".
func (b *InProcess) Name() string { return "in-process" }

// Renderer returns RendererGo or RendererLlama.
func (b *InProcess) Renderer() string { return b.tmpl.Name() }

// TemplateTime returns the clock the template reads.
func (b *InProcess) TemplateTime() time.Time { return b.tmpl.Now() }

// Model returns the loaded model.
func (b *InProcess) Model() *llama.Model { return b.model }

// NCtx returns the n_ctx in force; NCtxTrain the model's training context.
func (b *InProcess) NCtx() int      { return b.nCtx }
func (b *InProcess) NCtxTrain() int { return b.nCtxTrain }

// TemplateSHA256 returns the SHA-256 of the template source the renderer uses.
func (b *InProcess) TemplateSHA256() string { return b.tmpl.SHA256() }

// Render renders through the chosen renderer. Errors wrap render.ErrTemplate (both renderers).
func (b *InProcess) Render(_ context.Context, messages []contract.ChatMessage) (string, error) {
	return b.tmpl.Render(messages)
}

// Tokenize is llama_tokenize with add_special=false.
func (b *InProcess) Tokenize(_ context.Context, text string, parseSpecial bool) ([]int32, error) {
	return b.model.Vocab().Tokenize(text, false, parseSpecial)
}

// Detokenize is llama_detokenize with remove_special=false, unparse_special=true.
func (b *InProcess) Detokenize(_ context.Context, tokens []int32) (string, error) {
	return b.model.Vocab().Detokenize(tokens, false, true)
}

// NextToken decodes prompt as sequence 0 and reads ids at the last position: raw logits
// (llama_get_logits_ith) and log-softmax over the full vocabulary, computed in float64.
//
// Tokens that the previous prompt left in the KV cache and that this prompt starts with are not
// decoded again: the cache is cut back to the common prefix (llama_memory_seq_rm) and only the
// rest is decoded, in chunks of ≤ n_batch tokens, at least two tokens at a time. With flash
// attention off this gives bit-identical logits to decoding the whole prompt (tested).
// Errors: *PromptTooLongError, llama decode errors, an error wrapping ctx.Err().
func (b *InProcess) NextToken(ctx context.Context, prompt []int32, ids []int32) (Readout, error) {
	logits, err := b.nextTokenLogits(ctx, prompt)
	if err != nil {
		return Readout{}, err
	}
	return ReadoutFromLogits(logits, ids)
}

// ReadoutFromLogits reads ids from a full next-token logit row (length n_vocab): raw logits and
// logit - logsumexp(logits). Errors: an id outside the row.
func ReadoutFromLogits(logits []float32, ids []int32) (Readout, error) {
	lse := contract.LogSumExp(logits)
	r := Readout{Logprobs: make([]float64, len(ids)), Logits: make([]float64, len(ids))}
	for i, id := range ids {
		if id < 0 || int(id) >= len(logits) {
			return Readout{}, fmt.Errorf("%w: %d outside the vocabulary (%d)", llama.ErrToken, id, len(logits))
		}
		r.Logits[i] = float64(logits[id])
		r.Logprobs[i] = r.Logits[i] - lse
	}
	return r, nil
}

// Logits decodes prompt like NextToken and returns the whole logit row (n_vocab floats).
func (b *InProcess) Logits(ctx context.Context, prompt []int32) ([]float32, error) {
	return b.nextTokenLogits(ctx, prompt)
}

func (b *InProcess) nextTokenLogits(ctx context.Context, tokens []llama.Token) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, contract.ErrEmptyPrompt
	}
	if len(tokens) > b.nCtx {
		return nil, &PromptTooLongError{NTokens: len(tokens), NCtx: b.nCtx, NCtxTrain: b.nCtxTrain}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lctx == nil {
		return nil, llama.ErrClosed
	}
	keep, spans := DecodePlan(b.cached, tokens, b.nBatch)
	if b.noReuse {
		keep, spans = 0, alignedChunks(0, len(tokens), b.nBatch)
	}
	if keep < len(b.cached) {
		if ok, err := b.lctx.SeqRm(0, keep, -1); err != nil || !ok {
			keep = 0
			if err := b.lctx.MemoryClear(); err != nil {
				return nil, err
			}
		}
	}
	b.cached = b.cached[:keep]
	last := 0
	for _, span := range spans {
		b.batch.Clear()
		for i := span[0]; i < span[1]; i++ {
			row, err := b.batch.Add(tokens[i], i, []int{0}, i == len(tokens)-1)
			if err != nil {
				return nil, err
			}
			last = row
		}
		if err := b.lctx.Decode(ctx, b.batch); err != nil {
			// The cache may hold part of this prompt: forget it all.
			b.cached = b.cached[:0]
			_ = b.lctx.MemoryClear()
			return nil, err
		}
		b.cached = append(b.cached, tokens[span[0]:span[1]]...)
	}
	return b.lctx.Logits(last)
}

// Close frees the batch, the context, the template and the model, in that order. Idempotent.
func (b *InProcess) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.batch != nil {
		_ = b.batch.Close()
		_ = b.lctx.Close()
		b.closeTemplates()
		_ = b.model.Close()
		b.batch, b.lctx = nil, nil
	}
	return nil
}

func commonPrefix(a, b []llama.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Align is the alignment of decode batches: every batch of a prompt but its first starts at a
// position that is a multiple of Align, and a prompt reuses a cached prefix only up to a
// multiple of Align. llama.cpp's CPU backend repacks Q4_K weights (and others) for AVX2 and
// NEON (ggml-cpu/repack.cpp) and then multiplies a batch in groups of 4 rows (gemm), the rows
// past the last full group one by one (gemv), with other rounding: a token's logits would
// depend on where its batch started, so on which prompt was decoded before it (measured on
// Qwen2.5-Coder-1.5B Q4_K_M: up to 0.147 in a log-probability between --window 1 and 32).
// With batches aligned to absolute positions, every token falls in the same group of 4 as
// when its prompt is decoded alone.
const Align = 4

// DecodePlan says how to decode tokens after a cache holding cached: keep is the number of
// cached tokens reused (the common prefix, rounded down to a multiple of Align, leaving at
// least two tokens to decode), and spans are the [start, end) positions of each llama_decode
// batch, at most nBatch tokens each, boundaries at multiples of Align (alignedChunks).
func DecodePlan(cached, tokens []llama.Token, nBatch int) (keep int, spans [][2]int) {
	keep = min(commonPrefix(cached, tokens), len(tokens)-2)
	keep = max(0, keep-keep%Align)
	return keep, alignedChunks(keep, len(tokens), nBatch)
}

// alignedChunks splits positions [start, end) into near-equal batches of at most size tokens
// whose inner boundaries are multiples of Align (start is one, or 0), none of one token when
// end-start ≥ 2. Below 4·Align tokens a batch cannot be both aligned and near-equal; Chunks'
// unaligned split is used then.
func alignedChunks(start, end, size int) [][2]int {
	n := end - start
	if n <= 0 {
		return nil
	}
	if size < 4*Align {
		spans := Chunks(n, size)
		for i := range spans {
			spans[i][0] += start
			spans[i][1] += start
		}
		return spans
	}
	step := size - Align // a boundary rounded down stays within size
	count := (n + step - 1) / step
	spans := make([][2]int, 0, count)
	prev := start
	for k := 1; k < count; k++ {
		b := start + k*n/count
		b -= b % Align
		if b-prev >= 2 && end-b >= 2 {
			spans = append(spans, [2]int{prev, b})
			prev = b
		}
	}
	return append(spans, [2]int{prev, end})
}

// Chunks splits n tokens into [start, end) spans of at most size tokens, of near-equal length.
// Equal spans avoid a final one-token batch: llama.cpp's CPU backend decodes a single token
// through a different matrix-vector path, whose logits differ from the batched path's
// (measured: up to 0.35 in a logit on SmolLM2-135M), while any split into spans of two or more
// tokens gives identical logits.
func Chunks(n, size int) [][2]int {
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

// ErrPromptTooLong: the rendered prompt has more tokens than n_ctx.
var ErrPromptTooLong = fmt.Errorf("backend: prompt longer than n_ctx")

// PromptTooLongError reports a prompt that cannot fit the context: NTokens > NCtx. NCtxTrain
// is the model's training context, the most NCtx can be raised to (0 when unknown).
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
