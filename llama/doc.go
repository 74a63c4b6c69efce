// Package llama is gojev's cgo layer: one Go type per llama.h handle, with semantics close to
// the C API and nothing of gojev's contracts.
//
//   - Model (llama_model): LoadModel validates the GGUF structure in Go, then calls
//     llama_model_load_from_file. Safe for concurrent use.
//   - Vocab (llama_vocab): tokenize, detokenize, token pieces, BOS/EOS, n_vocab. Owned by its
//     Model; safe for concurrent use (llama.h: "The API is thread-safe").
//   - Context (llama_context): KV cache, Decode, Logits, sequence memory. Not for concurrent
//     use: one per goroutine, or serialise Decode and Logits.
//   - Batch (llama_batch): tokens, positions, seq_ids and output flags for one Decode. Not for
//     concurrent use.
//
// Every handle has one owner and one free: Close (idempotent). Close contexts before their
// model. Live reports the handles not yet closed. No Go pointer is kept by C: text and token
// slices are passed for the duration of a call only, and the abort flag lives in C memory.
//
// Bad input returns an error instead of reaching the llama.cpp code paths that abort the
// process: GGUF files are validated before loading, token ids and seq_ids are range-checked,
// batch sizes are checked against n_batch, and only flagged logits rows can be read.
//
// llama.cpp's and ggml's own log lines go through log/slog (SetLogger).
package llama
