package llama

import (
	"errors"
	"fmt"
)

// Sentinel errors, testable with errors.Is. Functions wrap them with the detail at hand.
var (
	// ErrClosed: a method was called on a handle after Close.
	ErrClosed = errors.New("llama: handle is closed")
	// ErrLoad: llama_model_load_from_file returned NULL, or the file failed the GGUF
	// pre-validation that runs before llama.cpp sees it (see gguf.ErrNotGGUF and friends,
	// which the returned error also wraps).
	ErrLoad = errors.New("llama: cannot load model")
	// ErrContext: llama_init_from_model returned NULL, or the parameters were out of range.
	ErrContext = errors.New("llama: cannot create context")
	// ErrTokenize: llama_tokenize or llama_detokenize failed, or the text is too long for
	// int32 lengths.
	ErrTokenize = errors.New("llama: tokenization failed")
	// ErrToken: a token id is outside [0, n_vocab); llama.cpp would assert on it.
	ErrToken = errors.New("llama: token id out of range")
	// ErrBatch: a batch is malformed for this context (empty, over n_batch, over capacity, a
	// seq_id outside [0, n_seq_max), a token id out of range).
	ErrBatch = errors.New("llama: invalid batch")
	// ErrNoKVSlot: llama_decode returned 1 (no KV cache slot for the batch: n_ctx too small).
	ErrNoKVSlot = errors.New("llama: no KV cache slot for the batch")
	// ErrAborted: llama_decode returned 2 because the abort callback fired (the context passed
	// to Decode was cancelled). The error returned also wraps the context's error.
	ErrAborted = errors.New("llama: decode aborted")
	// ErrDecode: llama_decode returned another non-zero code.
	ErrDecode = errors.New("llama: decode failed")
	// ErrNoLogits: the requested output row has no logits (its batch entry was not flagged).
	ErrNoLogits = errors.New("llama: no logits for this row")
)

// DecodeError reports a non-zero llama_decode return code. It wraps ErrNoKVSlot, ErrAborted or
// ErrDecode according to Code, as llama.h documents the codes.
type DecodeError struct {
	Code    int // llama_decode's return value
	NTokens int // tokens in the batch
	cause   error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("llama_decode returned %d for a batch of %d tokens: %v", e.Code, e.NTokens, e.cause)
}

func (e *DecodeError) Unwrap() []error { return []error{e.cause} }
