package engine

import (
	"fmt"
	"runtime"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// Contract selects the prompt contract an Engine serves.
type Contract int

const (
	// Direct is direct-options-v1: one prompt per row, answer letters A..P (as package decide).
	Direct Contract = iota
	// Binary is binary-candidates-v1: one yes/no prompt per option, ranked by p_yes.
	Binary
)

// String returns the contract's prompt version.
func (c Contract) String() string {
	switch c {
	case Direct:
		return contract.PromptVersion
	case Binary:
		return contract.BinaryPromptVersion
	}
	return fmt.Sprintf("Contract(%d)", int(c))
}

// Defaults, applied to zero Options fields (see Options for the rules).
const (
	DefaultNCtx   = 4096 // n_ctx cap: the longest prompt, in tokens
	DefaultNBatch = 512  // n_batch (= n_ubatch): tokens per llama_decode
	minNBatch     = 8
)

// Options configure an Engine. The zero value of each field means its default.
type Options struct {
	// Contract is the prompt contract every row is decided under (default Direct).
	Contract Contract
	// NGPULayers is n_gpu_layers (llama_model_params): layers offloaded to a GPU backend
	// (-1 all, 0 none, the default). No effect in a CPU-only build.
	NGPULayers int
	// NCtx is n_ctx, the KV cache size in tokens: the longest prompt. Default:
	// min(DefaultNCtx, the model's training context n_ctx_train); a larger value is capped at
	// n_ctx_train. A prompt may hold at most n_ctx tokens.
	NCtx int
	// NBatch is n_batch and n_ubatch, the most tokens one llama_decode submits (default
	// DefaultNBatch, at most NCtx, at least 8). Larger levels are decoded in near-equal chunks.
	NBatch int
	// NThreads is n_threads and n_threads_batch (default runtime.NumCPU(): prompt processing
	// on a CPU is compute-bound and uses every core).
	NThreads int
	// ChatTemplate overrides the model's tokenizer.chat_template (Jinja source).
	ChatTemplate string
	// ChatTemplateKwargs are passed to the template as variables; nil means
	// {"enable_thinking": false}, the seed's default.
	ChatTemplateKwargs map[string]any
	// Renderer is backend.RendererGo (default) or backend.RendererLlama.
	Renderer string
	// TemplateTime is the clock templates read (strftime_now, date_string); zero means today,
	// 00:00 UTC, taken once at Open (as package backend).
	TemplateTime time.Time
	// NoMmap reads the weights into memory instead of memory-mapping them (use_mmap=false).
	NoMmap bool
	// Debias is the bias control every row gets (package debias); the prompts never change:
	// debias.None (default); debias.PriDe (Direct: one decode per row, debiased with the
	// letter prior for its option count from Prior or SetPrior, which EstimatePrior
	// estimates); debias.Cyclic (Direct: every row under all k cyclic permutations of its
	// options, k decodes sharing their common prefix); debias.Contextual (Binary: each
	// candidate's p_yes calibrated against content-free evidence, three extra prompts per
	// question and candidate, cached).
	Debias debias.Method
	// Prior is PriDe's letter prior (a prior file, debias.LoadPrior), used under debias.PriDe.
	Prior *debias.Prior
}

// resolve fills defaults given the model's training context (0 = unknown).
func (o Options) resolve(nCtxTrain int) (Options, error) {
	switch o.Contract {
	case Direct, Binary:
	default:
		return o, fmt.Errorf("%w: unknown contract %d", ErrOptions, int(o.Contract))
	}
	switch {
	case o.Debias == debias.None:
	case (o.Debias == debias.PriDe || o.Debias == debias.Cyclic) && o.Contract == Direct:
	case o.Debias == debias.Contextual && o.Contract == Binary:
	default:
		return o, fmt.Errorf("%w: debias method %q does not apply to %s (pride and cyclic: direct; contextual: binary)",
			ErrOptions, o.Debias, o.Contract)
	}
	if o.NCtx < 0 || o.NBatch < 0 || o.NThreads < 0 {
		return o, fmt.Errorf("%w: negative n_ctx/n_batch/n_threads", ErrOptions)
	}
	if o.NCtx == 0 {
		o.NCtx = DefaultNCtx
		if nCtxTrain > 0 {
			o.NCtx = min(o.NCtx, nCtxTrain)
		}
	}
	if nCtxTrain > 0 && o.NCtx > nCtxTrain {
		o.NCtx = nCtxTrain
	}
	if o.NBatch == 0 {
		o.NBatch = DefaultNBatch
	}
	o.NBatch = min(o.NBatch, o.NCtx)
	if o.NBatch < minNBatch {
		return o, fmt.Errorf("%w: n_batch %d (at least %d)", ErrOptions, o.NBatch, minNBatch)
	}
	if o.NThreads == 0 {
		o.NThreads = runtime.NumCPU()
	}
	return o, nil
}
