package llama

/*
#include "gojev.h"

// The abort flag lives in C memory owned by the Context; llama.cpp's compute threads read it
// through this callback, and Go sets it when the caller's context.Context is cancelled.
static bool gojev_abort_cb(void *data) {
	return __atomic_load_n((int *)data, __ATOMIC_RELAXED) != 0;
}

static void gojev_set_flag(int *flag, int value) {
	__atomic_store_n(flag, value, __ATOMIC_RELAXED);
}

static void gojev_set_abort(struct llama_context *ctx, int *flag) {
	llama_set_abort_callback(ctx, gojev_abort_cb, flag);
}
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

// ContextParams are the llama_context_params this package exposes.
type ContextParams struct {
	NCtx          int  // n_ctx: KV cache size in tokens, shared by all sequences; 0 = the model's training context
	NBatch        int  // n_batch: most tokens one Decode may submit
	NUBatch       int  // n_ubatch: physical micro-batch size (≤ NBatch)
	NSeqMax       int  // n_seq_max: distinct sequences (seq_id in [0, NSeqMax))
	NThreads      int  // n_threads: threads for single-token decoding
	NThreadsBatch int  // n_threads_batch: threads for prompt (multi-token) decoding
	KVUnified     bool // kv_unified: one KV buffer for all sequences (needed to copy partial sequences)
	// FlashAttn enables flash attention (flash_attn_type ENABLED; false means DISABLED, not
	// llama.cpp's AUTO). Off by default: on the CPU backend the flash-attention kernel makes a
	// token's logits depend on how the prompt is split into batches (measured: up to 0.33 in a
	// logit on SmolLM2-135M between one 200-token batch and chunks of 16), while without it any
	// split into batches of two or more tokens gives bit-identical logits.
	FlashAttn bool
	// NoOpOffload sets op_offload false: operations on weights in host memory stay on the CPU
	// even when a GPU backend is loaded (llama.cpp otherwise runs a large batch's matrix
	// multiplications of CPU-resident layers on the GPU, copying the weights over).
	NoOpOffload bool
}

// DefaultContextParams returns n_ctx 4096, n_batch 2048, n_ubatch 512, n_seq_max 1 and one
// thread per available CPU (runtime.NumCPU), with a per-sequence KV cache.
func DefaultContextParams() ContextParams {
	n := runtime.NumCPU()
	return ContextParams{NCtx: 4096, NBatch: 2048, NUBatch: 512, NSeqMax: 1, NThreads: n, NThreadsBatch: n}
}

// Context is a llama_context: a KV cache and the buffers of one decoding stream, made from a
// Model. It is NOT for concurrent use: its methods take an internal lock, so misuse cannot
// corrupt memory, but the logits a goroutine reads belong to whichever Decode ran last. Use one
// Context per goroutine, or serialise Decode+Logits yourself. Close it before its Model.
type Context struct {
	mu      sync.Mutex
	c       *C.struct_llama_context
	model   *Model
	params  ContextParams
	nVocab  int
	abort   *C.int // C-owned abort flag, freed in Close
	outputs []bool // which rows of the last decoded batch have logits
}

// NewContext creates a context for m (llama_init_from_model). Zero fields of p take
// DefaultContextParams' values, except NCtx (0 = the model's training context). Errors wrap
// ErrContext (bad parameters, llama.cpp refused) or ErrClosed.
func NewContext(m *Model, p ContextParams) (*Context, error) {
	d := DefaultContextParams()
	if p.NBatch == 0 {
		p.NBatch = d.NBatch
	}
	if p.NUBatch == 0 {
		p.NUBatch = min(d.NUBatch, p.NBatch)
	}
	if p.NSeqMax == 0 {
		p.NSeqMax = d.NSeqMax
	}
	if p.NThreads == 0 {
		p.NThreads = d.NThreads
	}
	if p.NThreadsBatch == 0 {
		p.NThreadsBatch = p.NThreads
	}
	switch {
	case p.NCtx < 0 || p.NCtx > 1<<24:
		return nil, fmt.Errorf("%w: n_ctx %d", ErrContext, p.NCtx)
	case p.NBatch < 1 || p.NBatch > 1<<20:
		return nil, fmt.Errorf("%w: n_batch %d", ErrContext, p.NBatch)
	case p.NUBatch < 1 || p.NUBatch > p.NBatch:
		return nil, fmt.Errorf("%w: n_ubatch %d (must be in [1, n_batch=%d])", ErrContext, p.NUBatch, p.NBatch)
	case p.NSeqMax < 1 || p.NSeqMax > 256:
		return nil, fmt.Errorf("%w: n_seq_max %d (llama.cpp allows 1..256)", ErrContext, p.NSeqMax)
	case p.NThreads < 1 || p.NThreadsBatch < 1 || p.NThreads > 1024 || p.NThreadsBatch > 1024:
		return nil, fmt.Errorf("%w: n_threads %d, n_threads_batch %d", ErrContext, p.NThreads, p.NThreadsBatch)
	}
	cm, err := m.acquire()
	if err != nil {
		return nil, err
	}
	defer m.release()
	if m.header != nil && len(m.header.Tensors) == 0 {
		return nil, fmt.Errorf("%w: model %s was loaded vocab-only", ErrContext, m.path)
	}
	cp := C.llama_context_default_params()
	cp.n_ctx = C.uint32_t(p.NCtx)
	cp.n_batch = C.uint32_t(p.NBatch)
	cp.n_ubatch = C.uint32_t(p.NUBatch)
	cp.n_seq_max = C.uint32_t(p.NSeqMax)
	cp.n_threads = C.int32_t(p.NThreads)
	cp.n_threads_batch = C.int32_t(p.NThreadsBatch)
	cp.kv_unified = C.bool(p.KVUnified)
	cp.no_perf = true
	cp.op_offload = C.bool(!p.NoOpOffload)
	cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_DISABLED
	if p.FlashAttn {
		cp.flash_attn_type = C.LLAMA_FLASH_ATTN_TYPE_ENABLED
	}
	cc := C.llama_init_from_model(cm, cp)
	if cc == nil {
		return nil, fmt.Errorf("%w: llama_init_from_model failed (its log, at slog level error, says why)", ErrContext)
	}
	c := &Context{c: cc, model: m, params: p, nVocab: m.vocab.n}
	c.params.NCtx = int(C.llama_n_ctx(cc))
	c.abort = (*C.int)(C.calloc(1, C.size_t(unsafe.Sizeof(C.int(0)))))
	C.gojev_set_abort(cc, c.abort)
	liveContexts.Add(1)
	return c, nil
}

// Params returns the parameters in force; NCtx is the actual n_ctx (llama_n_ctx).
func (c *Context) Params() ContextParams { return c.params }

// NCtx returns n_ctx, the KV cache size in tokens (llama_n_ctx).
func (c *Context) NCtx() int { return c.params.NCtx }

// NBatch returns n_batch, the most tokens one Decode accepts (llama_n_batch).
func (c *Context) NBatch() int { return c.params.NBatch }

// NSeqMax returns n_seq_max (llama_n_seq_max).
func (c *Context) NSeqMax() int { return c.params.NSeqMax }

// Model returns the model the context was made from.
func (c *Context) Model() *Model { return c.model }

// Close frees the context (llama_free) and its abort flag. It is idempotent.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c != nil {
		C.llama_free(c.c)
		C.free(unsafe.Pointer(c.abort))
		c.c, c.abort = nil, nil
		liveContexts.Add(-1)
	}
	return nil
}

// Decode runs the model on batch b (llama_decode) and keeps the logits of the rows b flagged.
//
// The batch is validated in Go first, since llama.cpp asserts instead of returning on some
// inputs: it must hold 1..n_batch tokens, every id in [0, n_vocab) and every seq_id in
// [0, n_seq_max) (errors wrap ErrBatch). Cancelling ctx sets the abort callback
// (llama_set_abort_callback), which llama.cpp's CPU backend polls between graph nodes; the
// error then wraps ErrAborted and ctx.Err(). Other failures are a *DecodeError wrapping
// ErrNoKVSlot (code 1: the KV cache is full) or ErrDecode. After a failed decode llama.cpp
// restores the memory state, except on abort, where finished micro-batches stay in the cache.
func (c *Context) Decode(ctx context.Context, b *Batch) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	if b.closed {
		return fmt.Errorf("batch: %w", ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	n := b.Len()
	if n == 0 || n > c.params.NBatch {
		return fmt.Errorf("%w: %d tokens (must be 1..n_batch=%d)", ErrBatch, n, c.params.NBatch)
	}
	outputs := make([]bool, n)
	for i := range n {
		t, _, seqs, logits := b.entry(i)
		if t < 0 || int(t) >= c.nVocab {
			return fmt.Errorf("%w: token %d at row %d not in [0, %d)", ErrBatch, t, i, c.nVocab)
		}
		for _, s := range seqs {
			if int(s) >= c.params.NSeqMax {
				return fmt.Errorf("%w: seq_id %d at row %d not in [0, n_seq_max=%d)", ErrBatch, s, i, c.params.NSeqMax)
			}
		}
		outputs[i] = logits
	}
	C.gojev_set_flag(c.abort, 0)
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		aborting.Add(1)
		C.gojev_set_flag(c.abort, 1)
		close(fired)
	})
	rc := int(C.llama_decode(c.c, b.c))
	if !stop() { // the abort fired (or is firing): wait for it, then stop expecting its log
		<-fired
		aborting.Add(-1)
	}
	c.outputs = nil
	switch {
	case rc == 0:
		c.outputs = outputs
		return nil
	case rc == 2 && ctx.Err() != nil:
		return &DecodeError{Code: rc, NTokens: n, cause: fmt.Errorf("%w: %w", ErrAborted, ctx.Err())}
	case rc == 1:
		return &DecodeError{Code: rc, NTokens: n, cause: ErrNoKVSlot}
	default:
		return &DecodeError{Code: rc, NTokens: n, cause: ErrDecode}
	}
}

// Logits returns a copy of the logits of batch row i from the last Decode
// (llama_get_logits_ith): a []float32 of length n_vocab, raw (before any softmax). Row i must
// have been added with logits=true (else ErrNoLogits). The copy stays valid after the next
// Decode, which overwrites llama.cpp's buffer.
func (c *Context) Logits(i int) ([]float32, error) {
	out := make([]float32, c.nVocab)
	if err := c.LogitsInto(out, i); err != nil {
		return nil, err
	}
	return out, nil
}

// LogitsInto copies the logits of batch row i into dst, which must have length n_vocab; see
// Logits.
func (c *Context) LogitsInto(dst []float32, i int) error {
	if len(dst) != c.nVocab {
		return fmt.Errorf("%w: destination has %d floats, n_vocab is %d", ErrNoLogits, len(dst), c.nVocab)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	if i < 0 || i >= len(c.outputs) || !c.outputs[i] {
		return fmt.Errorf("%w: row %d of the last batch (%d rows) was not flagged for logits", ErrNoLogits, i, len(c.outputs))
	}
	p := C.llama_get_logits_ith(c.c, C.int32_t(i))
	if p == nil {
		return fmt.Errorf("%w: llama_get_logits_ith(%d) returned NULL", ErrNoLogits, i)
	}
	copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(p)), c.nVocab))
	return nil
}

// MemoryClear empties the KV cache of every sequence (llama_memory_clear with data=true).
func (c *Context) MemoryClear() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	C.llama_memory_clear(C.llama_get_memory(c.c), true)
	c.outputs = nil
	return nil
}

// SeqRm removes the cached tokens of sequence seq at positions [p0, p1) (llama_memory_seq_rm;
// seq < 0 matches every sequence, p0 < 0 means 0, p1 < 0 means to the end). It reports whether
// it could: removing part of a sequence can fail, a whole sequence never does.
func (c *Context) SeqRm(seq, p0, p1 int) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return false, ErrClosed
	}
	if seq >= c.params.NSeqMax {
		return false, fmt.Errorf("%w: seq_id %d not below n_seq_max %d", ErrBatch, seq, c.params.NSeqMax)
	}
	return bool(C.llama_memory_seq_rm(C.llama_get_memory(c.c), C.llama_seq_id(seq), C.llama_pos(p0), C.llama_pos(p1))), nil
}

// SeqCp copies the cached tokens of sequence src at positions [p0, p1) to sequence dst
// (llama_memory_seq_cp; p0 < 0 means 0, p1 < 0 means to the end). Copying part of a sequence
// needs KVUnified, or llama.cpp asserts; this returns ErrBatch instead.
func (c *Context) SeqCp(src, dst, p0, p1 int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	if src < 0 || dst < 0 || src >= c.params.NSeqMax || dst >= c.params.NSeqMax {
		return fmt.Errorf("%w: seq ids %d→%d not in [0, n_seq_max=%d)", ErrBatch, src, dst, c.params.NSeqMax)
	}
	if !c.params.KVUnified && (p0 > 0 || p1 >= 0) {
		return fmt.Errorf("%w: copying part of a sequence needs kv_unified", ErrBatch)
	}
	C.llama_memory_seq_cp(C.llama_get_memory(c.c), C.llama_seq_id(src), C.llama_seq_id(dst), C.llama_pos(p0), C.llama_pos(p1))
	return nil
}

// SeqPosMax returns the largest cached position of sequence seq, or -1 when it is empty
// (llama_memory_seq_pos_max).
func (c *Context) SeqPosMax(seq int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return 0, ErrClosed
	}
	if seq < 0 || seq >= c.params.NSeqMax {
		return 0, fmt.Errorf("%w: seq_id %d not in [0, n_seq_max=%d)", ErrBatch, seq, c.params.NSeqMax)
	}
	return int(C.llama_memory_seq_pos_max(C.llama_get_memory(c.c), C.llama_seq_id(seq))), nil
}

// SetEmbeddings turns the extraction of embeddings on or off for the Decodes that follow
// (llama_set_embeddings). With it on, each row flagged for output also keeps its last layer's
// hidden state (pooling none, as llama.cpp does for a generative model), read by Embedding;
// the logits are computed as before.
func (c *Context) SetEmbeddings(on bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	C.llama_set_embeddings(c.c, C.bool(on))
	return nil
}

// NEmbd is the model's hidden size, the length of an Embedding (llama_model_n_embd).
func (c *Context) NEmbd() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return 0
	}
	return int(C.llama_model_n_embd(C.llama_get_model(c.c)))
}

// EmbeddingInto copies the hidden state of batch row i from the last Decode
// (llama_get_embeddings_ith: the last layer's output after its norm, n_embd floats) into dst,
// which must have length NEmbd. The Decode must have run with SetEmbeddings(true) and row i
// flagged for output; else the error wraps ErrNoLogits.
func (c *Context) EmbeddingInto(dst []float32, i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c == nil {
		return ErrClosed
	}
	n := int(C.llama_model_n_embd(C.llama_get_model(c.c)))
	if len(dst) != n {
		return fmt.Errorf("%w: destination has %d floats, n_embd is %d", ErrNoLogits, len(dst), n)
	}
	if i < 0 || i >= len(c.outputs) || !c.outputs[i] {
		return fmt.Errorf("%w: row %d of the last batch (%d rows) was not flagged for output", ErrNoLogits, i, len(c.outputs))
	}
	p := C.llama_get_embeddings_ith(c.c, C.int32_t(i))
	if p == nil {
		return fmt.Errorf("%w: llama_get_embeddings_ith(%d) returned NULL (embeddings off?)", ErrNoLogits, i)
	}
	copy(dst, unsafe.Slice((*float32)(unsafe.Pointer(p)), n))
	return nil
}
