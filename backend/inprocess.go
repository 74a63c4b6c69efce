//go:build cgo

package backend

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
)

// InProcess runs the contract on llama.cpp in this process: one model, one llama context with
// one sequence, NextToken calls serialised on a mutex (safe for concurrent use; gojev.Decider
// feeds it prompts in the order of their tokens, so that each shares the longest prefix with
// the one before). The tokens of the previous prompt stay in the
// KV cache, and the next prompt decodes only what follows their common prefix (bit-identical
// logits, see NextToken).
type InProcess struct {
	mu        sync.Mutex
	model     *llama.Model
	lctx      *llama.Context
	batch     *llama.Batch
	tmpl      *Template
	tok       *llama.FragmentTokenizer
	noReuse   bool
	nCtx      int
	nBatch    int
	nCtxTrain int
	cached    []llama.Token // tokens of sequence 0 now in the KV cache, guarded by mu
	opts      InProcessOptions
}

// Devices names what decides, as run files record it (batch.RunFile.Devices and Plugins): the
// GPU devices that take layers under n_gpu_layers, and the CPU unless every layer is
// offloaded; and the backend plugins loaded in this process (llama.LoadedBackends), sorted.
func (b *InProcess) Devices() (devices, plugins []string) {
	n := b.opts.nGPULayers()
	if n != 0 {
		devices = llama.GPUNames(llama.Devices())
	}
	if len(devices) == 0 || n > 0 {
		devices = append(devices, "CPU")
	}
	return devices, slices.Sorted(maps.Keys(llama.LoadedBackends()))
}

// Options returns the options in force, defaults filled in (NCtx is the actual n_ctx).
func (b *InProcess) Options() InProcessOptions { return b.opts }

// OpenInProcess loads the model at path (llama_model_load_from_file, validated first by package
// gguf), compiles its chat template with the chosen renderer and creates a context
// (llama_init_from_model, one sequence, flash attention off), with opts' defaults filled in
// (InProcessOptions). Errors wrap ErrOptions, llama.ErrLoad, ErrNoTemplate,
// render.ErrTemplate or llama.ErrContext.
func OpenInProcess(path string, opts InProcessOptions) (*InProcess, error) {
	if err := opts.Check(); err != nil {
		return nil, err
	}
	if err := loadPlugins(opts); err != nil {
		return nil, err
	}
	return llama.OpenWith(path, opts.nGPULayers(), opts.NoMmap, func(m *llama.Model) (*InProcess, error) {
		return newInProcess(m, opts)
	})
}

// loadPlugins loads opts.Plugins (llama.LoadBackend) and checks that a GPU device is there to
// take the layers. Failures are errors unless opts.CPUFallback.
func loadPlugins(opts InProcessOptions) error {
	if len(opts.Plugins) == 0 {
		return nil
	}
	fail := func(err error) error {
		if !opts.CPUFallback {
			return err
		}
		slog.Warn("deciding on the CPU (CPU fallback)", "err", err)
		return nil
	}
	var names []string
	for _, p := range opts.Plugins {
		name, err := llama.LoadBackend(p)
		if err != nil {
			if err := fail(err); err != nil {
				return err
			}
			continue
		}
		names = append(names, name)
	}
	if opts.NoGPU || len(names) == 0 {
		return nil
	}
	for _, d := range llama.Devices() {
		if d.GPU() && slices.Contains(names, d.Backend) {
			return nil
		}
	}
	return fail(fmt.Errorf("%w: the %s backend of %s loaded but found no GPU device (is the driver installed? Vulkan lists a CPU-type device such as lavapipe only when GGML_VK_VISIBLE_DEVICES names it)",
		ErrNoDevice, strings.Join(names, ", "), strings.Join(opts.Plugins, ", ")))
}

func newInProcess(model *llama.Model, opts InProcessOptions) (*InProcess, error) {
	train, err := model.NCtxTrain()
	if err != nil {
		return nil, err
	}
	if opts.NCtx > train && train > 0 {
		slog.Warn("n_ctx exceeds the model's training context; using that", "n_ctx", opts.NCtx, "n_ctx_train", train)
	}
	if opts, err = opts.resolve(train); err != nil {
		return nil, err
	}
	tmpl, err := NewTemplate(model, TemplateOptions{Options: opts.Options, Renderer: opts.Renderer, ChatTemplate: opts.ChatTemplate})
	if err != nil {
		return nil, err
	}
	if opts.Decode == "" {
		opts.Decode = DecodeOneSequence
		if opts.nGPULayers() != 0 && slices.ContainsFunc(llama.Devices(), llama.Device.GPU) {
			opts.Decode = DecodePacked
		}
	}
	nSeq := 1
	if opts.Decode == DecodePacked {
		nSeq = opts.PackSeqs + 1
	}
	tok, err := llama.NewFragmentTokenizer(model.Vocab())
	if err != nil {
		_ = tmpl.Close()
		return nil, err
	}
	b := &InProcess{model: model, tmpl: tmpl, tok: tok, noReuse: opts.NoPrefixReuse, opts: opts}
	split := nSeq > 1 && opts.SplitKV
	nCtx := opts.NCtx
	if split {
		nCtx *= nSeq // each sequence its own NCtx cells
	}
	lctx, err := llama.NewContext(model, llama.ContextParams{NCtx: nCtx, NBatch: opts.NBatch, NUBatch: opts.NUBatch,
		NSeqMax: nSeq, KVUnified: nSeq > 1 && !split, FlashAttn: opts.FlashAttn, NThreads: opts.NThreads, NThreadsBatch: opts.NThreads, NoOpOffload: opts.NoGPU})
	if err != nil {
		b.closeTemplates()
		return nil, err
	}
	batch, err := llama.NewBatch(opts.NBatch, 1)
	if err != nil {
		_ = lctx.Close()
		b.closeTemplates()
		return nil, err
	}
	b.lctx, b.batch, b.nCtx, b.nBatch, b.nCtxTrain = lctx, batch, lctx.NCtx(), opts.NBatch, train
	if split {
		b.nCtx = lctx.NCtx() / nSeq // a prompt's room: one sequence's buffer
	}
	b.opts.NCtx = b.nCtx
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

// ModelInfo describes the loaded model (Modeler): its file, general.name, llama_model_desc and
// vocabulary size.
func (b *InProcess) ModelInfo() ModelInfo {
	name, _, _ := b.model.Meta("general.name")
	desc, _ := b.model.Desc()
	return ModelInfo{Path: b.model.Path(), Name: name, Desc: desc, NVocab: b.model.Vocab().NVocab()}
}

// NCtx returns the n_ctx in force; NCtxTrain the model's training context.
func (b *InProcess) NCtx() int      { return b.nCtx }
func (b *InProcess) NCtxTrain() int { return b.nCtxTrain }

// TemplateSHA256 returns the SHA-256 of the template source the renderer uses.
func (b *InProcess) TemplateSHA256() string { return b.tmpl.SHA256() }

// Render renders through the chosen renderer. Errors wrap render.ErrTemplate (both renderers).
func (b *InProcess) Render(_ context.Context, messages []contract.ChatMessage) (string, error) {
	return b.tmpl.Render(messages)
}

// Tokenize is llama_tokenize with add_special=false, token for token, through a
// llama.FragmentTokenizer: text between special tokens that was tokenized before (the system
// text, the template's head and tail) comes from its cache.
func (b *InProcess) Tokenize(_ context.Context, text string, parseSpecial bool) ([]int32, error) {
	return b.tok.Tokenize(text, parseSpecial)
}

// HasSpecialText reports whether text holds a control or unknown token's text
// (llama.FragmentTokenizer.HasSpecialText); without one, parse_special cannot change its
// tokens (SpecialTextFinder).
func (b *InProcess) HasSpecialText(_ context.Context, text string) bool {
	return b.tok.HasSpecialText(text)
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
	logits, decoded, err := b.nextTokenLogits(ctx, prompt)
	if err != nil {
		return Readout{}, err
	}
	r, err := ReadoutFromLogits(logits, ids)
	r.Decoded = decoded
	return r, err
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
	logits, _, err := b.nextTokenLogits(ctx, prompt)
	return logits, err
}

func (b *InProcess) nextTokenLogits(ctx context.Context, tokens []llama.Token) ([]float32, int, error) {
	var logits []float32
	decoded, err := b.decode(ctx, tokens, false, func(last int) (err error) {
		logits, err = b.lctx.Logits(last)
		return err
	})
	return logits, decoded, err
}

// Embed decodes prompt as NextToken does (the previous prompt's prefix reused from the KV
// cache) with llama.cpp's embeddings on, and returns the last layer's hidden state at its last
// position (llama_get_embeddings_ith, pooling none: n_embd floats) and how many tokens it
// decoded. Errors as NextToken's.
func (b *InProcess) Embed(ctx context.Context, prompt []int32) ([]float32, int, error) {
	var e []float32
	decoded, err := b.decode(ctx, prompt, true, func(last int) error {
		e = make([]float32, b.lctx.NEmbd())
		return b.lctx.EmbeddingInto(e, last)
	})
	return e, decoded, err
}

// decode decodes the tokens after the prefix they share with the KV cache's, with embeddings
// on or off, calls read with the batch row of the last token, and returns how many tokens it
// decoded.
func (b *InProcess) decode(ctx context.Context, tokens []llama.Token, embed bool, read func(last int) error) (int, error) {
	if err := b.CheckPrompt(tokens); err != nil {
		return 0, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lctx == nil {
		return 0, llama.ErrClosed
	}
	keep, spans := DecodePlan(b.cached, tokens, b.nBatch)
	if b.noReuse {
		keep, spans = 0, alignedChunks(0, len(tokens), b.nBatch)
	}
	planned := keep
	keep, err := b.cutSeq0(keep)
	if err != nil {
		return 0, err
	}
	if keep != planned { // the cache was emptied: decode the prompt whole
		spans = alignedChunks(keep, len(tokens), b.nBatch)
	}
	if embed {
		if err := b.lctx.SetEmbeddings(true); err != nil {
			return 0, err
		}
		defer func() { _ = b.lctx.SetEmbeddings(false) }()
	}
	last := 0
	for _, span := range spans {
		b.batch.Clear()
		for i := span[0]; i < span[1]; i++ {
			row, err := b.batch.Add(tokens[i], i, []int{0}, embed || i == len(tokens)-1) // embeddings: llama.cpp outputs every row
			if err != nil {
				return 0, err
			}
			last = row
		}
		if err := b.lctx.Decode(ctx, b.batch); err != nil {
			// The cache may hold part of this prompt: forget it all.
			b.cached = b.cached[:0]
			_ = b.lctx.MemoryClear()
			return 0, err
		}
		b.cached = append(b.cached, tokens[span[0]:span[1]]...)
	}
	return len(tokens) - keep, read(last)
}

// CheckPrompt refuses a prompt no decode can take: empty (contract.ErrEmptyPrompt), or longer
// than n_ctx (*PromptTooLongError). It reads no state a decode changes: safe from any goroutine.
func (b *InProcess) CheckPrompt(tokens []llama.Token) error {
	if len(tokens) == 0 {
		return contract.ErrEmptyPrompt
	}
	if len(tokens) > b.nCtx {
		return &PromptTooLongError{NTokens: len(tokens), NCtx: b.nCtx, NCtxTrain: b.nCtxTrain}
	}
	return nil
}

// cutSeq0 cuts sequence 0 back to its first keep cached tokens (b.mu held), emptying the whole
// cache when llama.cpp cannot remove part of it, and returns how many tokens stay cached.
func (b *InProcess) cutSeq0(keep int) (int, error) {
	if keep < len(b.cached) {
		if ok, err := b.lctx.SeqRm(0, keep, -1); err != nil || !ok {
			keep = 0
			if err := b.lctx.MemoryClear(); err != nil {
				return 0, err
			}
		}
	}
	b.cached = b.cached[:keep]
	return keep, nil
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
