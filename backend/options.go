package backend

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"github.com/gojev/gojev/pyjson"
)

// Renderer names accepted by InProcessOptions.Renderer.
const (
	RendererGo     = "go"     // package render: Go Jinja, byte-identical to transformers' Python Jinja2
	RendererLlama  = "llama"  // llama.Template: llama.cpp's common/chat, as llama-server renders
	RendererServer = "server" // the server's /apply-template (HTTP backend only)
)

// Defaults of InProcessOptions, applied to zero fields.
const (
	DefaultNCtx   = 4096 // n_ctx: the longest prompt, in tokens (capped at n_ctx_train)
	DefaultNBatch = 512  // n_batch (= n_ubatch): tokens per llama_decode
	MinNBatch     = 8    // the smallest n_batch accepted
	// DefaultPackSeqs is the default InProcessOptions.PackSeqs: the binary contract's 16
	// candidates of one row fit one packed decode.
	DefaultPackSeqs = 16
)

// ErrOptions: an option is out of range.
var ErrOptions = errors.New("backend: invalid options")

// Decode modes (InProcessOptions.Decode), recorded in every result as "decode".
const (
	DecodeOneSequence = "one-sequence"
	DecodePacked      = "packed"
)

// ErrNoDevice: backend plugins loaded, but none found a GPU device to offload to.
var ErrNoDevice = errors.New("backend: no GPU device")

// ErrNoTemplate: the model has no chat template in its metadata and none was given.
var ErrNoTemplate = errors.New("backend: no chat template")

// InProcessOptions configure an InProcess backend. The zero value of each field means its
// default; gojev.Options carries the same fields and jev's flags set them.
type InProcessOptions struct {
	Options
	// Renderer is RendererGo (default) or RendererLlama.
	Renderer string
	// ChatTemplate overrides the model's tokenizer.chat_template (Jinja source).
	ChatTemplate string
	// NGPULayers is n_gpu_layers, the layers offloaded to a GPU backend. The zero value
	// offloads every layer, as llama.cpp's llama_model_default_params (n_gpu_layers -1) and
	// jev's -ngl default do; NoGPU keeps every layer on the CPU (n_gpu_layers 0). No effect in
	// a CPU-only build.
	NGPULayers int
	// NoGPU sets n_gpu_layers to 0 and op_offload to false: the CPU does all the work even
	// when a GPU backend is loaded.
	NoGPU bool
	// Plugins are ggml backend plugins (libggml-cuda.so, libggml-vulkan.so, each beside the
	// libggml-base.so it was built with) loaded before the model (llama.LoadBackend), so
	// that its layers go to their devices. A plugin that fails to load is an error wrapping
	// llama.ErrBackendLoad; plugins that load without a GPU device while layers are to be
	// offloaded, one wrapping ErrNoDevice; unless CPUFallback is set: then it is logged as a warning and the model decides on the
	// CPU. Plugins stay loaded for the life of the process.
	Plugins []string
	// CPUFallback lets OpenInProcess go on without a plugin that failed, on the CPU.
	CPUFallback bool
	// NCtx is n_ctx, the KV cache size in tokens: the longest prompt. Default
	// min(DefaultNCtx, n_ctx_train); a larger value is capped at the model's n_ctx_train.
	NCtx int
	// NBatch is n_batch, the most tokens one llama_decode submits (default DefaultNBatch, at
	// most NCtx, at least MinNBatch). Longer prompts are decoded in chunks.
	NBatch int
	// NUBatch is n_ubatch, the most tokens the backend computes at once within a llama_decode
	// (default NBatch; at most NBatch).
	NUBatch int
	// FlashAttn turns flash attention on (flash_attn_type enabled; off by default: on the CPU
	// backend its kernel is slower and changes the logits beyond the parity bound; docs/gpu.md
	// has the GPU grid).
	FlashAttn bool
	// NThreads is n_threads and n_threads_batch (default runtime.NumCPU(): prompt processing
	// on a CPU is compute-bound and uses every core).
	NThreads int
	// NoMmap reads the weights into memory (use_mmap=false).
	NoMmap bool
	// Decode is how prompts are decoded: DecodeOneSequence (one prompt per llama_decode, in
	// sequence 0, reusing the previous prompt's prefix: bit-identical to decoding each
	// prompt alone) or DecodePacked (up to PackSeqs prompts per llama_decode as separate
	// sequences sharing their common prefix: not bit-identical, faster where a batch of
	// many sequences costs little more than one). "" picks per backend: packed when layers
	// are offloaded to a GPU device, one-sequence on the CPU.
	Decode string
	// PackSeqs is the most prompts one packed llama_decode takes (default DefaultPackSeqs):
	// the context gets n_seq_max PackSeqs+1 and a unified KV cache (kv_unified).
	PackSeqs int
	// NoSharedPrefix decodes each packed prompt whole in its own sequence, instead of their
	// common prefix once in sequence 0 copied to the others (llama_memory_seq_cp).
	NoSharedPrefix bool
	// SplitKV gives each sequence of a packed context a KV buffer of its own, NCtx cells each
	// (kv_unified false; n_ctx becomes NCtx × n_seq_max), instead of one unified buffer. Parts
	// of a sequence cannot be copied between split buffers, so it implies NoSharedPrefix.
	SplitKV bool
	// NoPrefixReuse decodes every prompt whole, clearing the KV cache first, as a runtime
	// without prompt caching would (jev bench's one-at-a-time baseline).
	NoPrefixReuse bool
}

// nGPULayers is the n_gpu_layers these options ask for.
func (o InProcessOptions) nGPULayers() int {
	switch {
	case o.NoGPU:
		return 0
	case o.NGPULayers == 0:
		return -1
	}
	return o.NGPULayers
}

// Check validates the options without a model: n_ctx, n_batch and n_threads not negative (0 is
// the default), a known decode mode and renderer, PackSeqs in 0..255. It is the one check of
// these settings (jev's flags call it too). Errors wrap ErrOptions and name the setting.
func (o InProcessOptions) Check() error {
	for _, v := range []struct {
		name string
		n    int
	}{{"n_ctx", o.NCtx}, {"n_batch", o.NBatch}, {"n_ubatch", o.NUBatch}, {"n_threads", o.NThreads}} {
		if v.n < 0 {
			return fmt.Errorf("%w: %s %d is negative (0 means the default)", ErrOptions, v.name, v.n)
		}
	}
	switch o.Decode {
	case "", DecodeOneSequence, DecodePacked:
	default:
		return fmt.Errorf("%w: unknown decode mode %q (want %s or %s)", ErrOptions, o.Decode, DecodeOneSequence, DecodePacked)
	}
	if o.PackSeqs < 0 || o.PackSeqs > 255 {
		return fmt.Errorf("%w: PackSeqs %d (1..255)", ErrOptions, o.PackSeqs)
	}
	switch o.Renderer {
	case "", RendererGo, RendererLlama:
	default:
		return fmt.Errorf("%w: unknown renderer %q (want %s or %s)", ErrOptions, o.Renderer, RendererGo, RendererLlama)
	}
	return nil
}

// resolve fills the defaults of options that passed Check, given the model's training
// context (0 = unknown). Errors wrap ErrOptions.
func (o InProcessOptions) resolve(nCtxTrain int) (InProcessOptions, error) {
	if o.PackSeqs == 0 {
		o.PackSeqs = DefaultPackSeqs
	}
	if o.NCtx == 0 {
		o.NCtx = DefaultNCtx
	}
	if nCtxTrain > 0 && o.NCtx > nCtxTrain {
		o.NCtx = nCtxTrain
	}
	if o.NBatch == 0 {
		o.NBatch = DefaultNBatch
	}
	o.NBatch = min(o.NBatch, o.NCtx)
	if o.NBatch < MinNBatch {
		return o, fmt.Errorf("%w: n_batch %d (at least %d)", ErrOptions, o.NBatch, MinNBatch)
	}
	if o.NUBatch == 0 || o.NUBatch > o.NBatch {
		o.NUBatch = o.NBatch
	}
	if o.NThreads == 0 {
		o.NThreads = runtime.NumCPU()
	}
	if o.SplitKV {
		o.NoSharedPrefix = true
	}
	return o, nil
}

// ParseTemplateKwargs reads chat_template_kwargs written as a JSON object (as llama-server's
// --chat-template-kwargs takes them) into the values Options.ChatTemplateKwargs holds: objects
// become maps, arrays slices, numbers json.Number literals as written (pyjson.Decode: 2 stays
// 2, not 2.0), and strings, booleans and null stay what they are. warnings name
// the values a template would misread: the strings "true" and "false", which Jinja tests as
// true (any non-empty string is). The error says where the JSON is wrong, or that it is not an
// object ("must be a JSON object").
func ParseTemplateKwargs(src []byte) (kwargs map[string]any, warnings []string, err error) {
	v, err := pyjson.Decode(src)
	var se *pyjson.SyntaxError
	if errors.As(err, &se) {
		return nil, nil, fmt.Errorf("is not JSON: invalid JSON at byte %d: %s", se.Offset, se.Msg)
	} else if err != nil {
		return nil, nil, err
	}
	obj, ok := v.(pyjson.Object)
	if !ok {
		return nil, nil, errors.New("must be a JSON object")
	}
	for _, m := range obj {
		if s, ok := m.Value.(string); ok && (strings.EqualFold(s, "true") || strings.EqualFold(s, "false")) {
			warnings = append(warnings, fmt.Sprintf("%q is the string %q, which a template reads as true (any non-empty string is); write %s without quotes for the boolean",
				m.Key, s, strings.ToLower(s)))
		}
	}
	return templateValue(obj).(map[string]any), warnings, nil
}

// templateValue converts a decoded JSON value to the Go values the renderer takes as template
// variables (objects become maps; booleans stay booleans, so false renders as False).
func templateValue(v any) any {
	switch x := v.(type) {
	case pyjson.Object:
		m := make(map[string]any, len(x))
		for _, mem := range x {
			m[mem.Key] = templateValue(mem.Value)
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = templateValue(e)
		}
		return out
	}
	return v
}
