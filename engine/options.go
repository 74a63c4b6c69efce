package engine

import (
	"fmt"
	"runtime"
	"time"

	"github.com/gojev/gojev/contract"
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
		return contract.PROMPT_VERSION
	case Binary:
		return contract.BINARY_PROMPT_VERSION
	}
	return fmt.Sprintf("Contract(%d)", int(c))
}

// Defaults, applied to zero Options fields (see Options for the rules).
const (
	DefaultNCtx       = 8192 // n_ctx cap: tokens of KV cache shared by all sequences
	DefaultNBatch     = 512  // n_batch (= n_ubatch): tokens per llama_decode
	DefaultNSeqMax    = 34   // n_seq_max: 32 prompts per round + the resident root + a scratch sequence
	minNSeqMax        = 3
	minNBatch         = 8
	roundReservedSeqs = 2 // seq 0 (root) and seq n_seq_max-1 (scratch)
)

// Options configure an Engine. The zero value of each field means its default.
type Options struct {
	// Contract is the prompt contract every row is decided under (default Direct).
	Contract Contract
	// NGPULayers is n_gpu_layers (llama_model_params): layers offloaded to a GPU backend
	// (-1 all, 0 none, the default). No effect in a CPU-only build.
	NGPULayers int
	// NCtx is n_ctx, the KV cache size in tokens that all prompts of one round share. Default:
	// min(DefaultNCtx, the model's training context n_ctx_train); a larger value is capped at
	// n_ctx_train. One prompt may hold at most n_ctx-1 tokens.
	NCtx int
	// NBatch is n_batch and n_ubatch, the most tokens one llama_decode submits (default
	// DefaultNBatch, at most NCtx, at least 8). Larger levels are decoded in near-equal chunks.
	NBatch int
	// NSeqMax is n_seq_max, the sequences of the context (default DefaultNSeqMax, 3..256).
	// A round decodes up to NSeqMax-2 prompts: seq 0 holds the resident shared prefix and
	// seq NSeqMax-1 is scratch. 34 lets one round hold two 16-option binary rows or 32 direct
	// rows, whose unique parts (~100 tokens each for Banking77) fit the default n_ctx.
	NSeqMax int
	// PackPrompts decodes the segments of all prompts of one trie level in one llama_decode
	// (one seq_id each, logits only at each prompt's last token) instead of one llama_decode
	// per segment. Off by default: measured on SmolLM2-135M with the pinned llama.cpp, packed
	// decodes move some rows' log-probabilities by up to ~0.2 against deciding each prompt
	// alone (cause not yet found; cell alignment fixed most of it, see cellAlign), while
	// separate decodes sharing the prefix through llama_memory_seq_cp are bit-identical.
	PackPrompts bool
	// NThreads is n_threads and n_threads_batch (default runtime.NumCPU()).
	NThreads int
	// ChatTemplate overrides the model's tokenizer.chat_template (Jinja source).
	ChatTemplate string
	// ChatTemplateKwargs are passed to the template as variables; nil means
	// {"enable_thinking": false}, the seed's default.
	ChatTemplateKwargs map[string]any
	// TemplateTime pins the template's strftime_now; zero means time.Now() at each render.
	TemplateTime time.Time
	// NoMmap reads the weights into memory instead of memory-mapping them (use_mmap=false).
	NoMmap bool
}

// resolve fills defaults given the model's training context (0 = unknown).
func (o Options) resolve(nCtxTrain int) (Options, error) {
	switch o.Contract {
	case Direct, Binary:
	default:
		return o, fmt.Errorf("%w: unknown contract %d", ErrOptions, int(o.Contract))
	}
	if o.NCtx < 0 || o.NBatch < 0 || o.NSeqMax < 0 || o.NThreads < 0 {
		return o, fmt.Errorf("%w: negative n_ctx/n_batch/n_seq_max/n_threads", ErrOptions)
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
	if o.NSeqMax == 0 {
		o.NSeqMax = DefaultNSeqMax
	}
	if o.NSeqMax < minNSeqMax || o.NSeqMax > 256 {
		return o, fmt.Errorf("%w: n_seq_max %d (must be in [%d, 256])", ErrOptions, o.NSeqMax, minNSeqMax)
	}
	if o.NThreads == 0 {
		o.NThreads = runtime.NumCPU()
	}
	return o, nil
}
