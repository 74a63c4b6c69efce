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
//   - Template (common_chat_templates): a chat template rendered by llama.cpp's own
//     common/chat code, as llama-server's /apply-template renders it, through a small C++ shim
//     (csrc/gojev_chat.cpp). Safe for concurrent use (renders are serialised).
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
//
// # Template: llama.cpp's renderer
//
// Template is the second renderer beside package render's Go Jinja engine: `jev --renderer
// llama` renders exactly as the server would, without a server. Differences from Python Jinja2
// that are llama.cpp's on purpose (measured on the 68-template corpus, see README): it supplies
// today's date as date_string (Llama 3.1/3.3) and datetime (firefunction-v2) unless
// render.Options.Now pins the clock, merges a system turn into the first user turn for
// templates that refuse a system role (Gemma 2), trims message whitespace for some templates
// (StepFun 3.5), and drops a leading BOS text when the model's vocab adds BOS itself (add_bos),
// since the server tokenizes with add_special.
//
// # Building
//
// The package links llama.cpp's static libraries. In a clone of gojev, `make` builds them once
// into ~/.cache/gojev and links third_party/native to them. From any other Go module,
// `eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"` does the same build and
// prints the CGO_CFLAGS/CGO_LDFLAGS that let a plain `go build` find them.
package llama
