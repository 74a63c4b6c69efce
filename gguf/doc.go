// Package gguf reads and validates the structure of a GGUF file in pure Go, before llama.cpp
// (which aborts the process on some malformed files) ever sees it.
//
// Open or Read parse the header, every metadata key-value pair and every tensor info, and
// locate (without reading) each tensor's data. A file that passes is one gguf.cpp's
// gguf_init_from_reader accepts and whose tensors pass llama.cpp's bounds check; one that
// fails returns a *FormatError giving the byte offset of the fault and wrapping a sentinel:
// ErrNotGGUF, ErrVersion, ErrTruncated or ErrCorrupt.
//
// # Layout
//
// All integers are little-endian. A GGUF file is (ggml/include/gguf.h):
//
//	magic      4 bytes  "GGUF"
//	version    u32      2 or 3
//	n_tensors  i64
//	n_kv       i64
//	n_kv × { key: string, type: i32, value }      value: scalar, string, or
//	                                              { elem type: i32, n: u64, n × element }
//	n_tensors × { name: string, n_dims: u32, n_dims × ne: i64, type: i32, offset: u64 }
//	padding to the alignment, then the tensor data
//
// where a string is a u64 byte length and the bytes (no terminator) and a bool is one byte.
//
// # Checks
//
// From gguf_init_from_reader (ggml/src/gguf.cpp, reached from gguf_init_from_file and
// gguf_init_from_file_ptr) and the gguf_reader it reads through, in its order:
//
//   - the file holds at least 4 bytes and they are "GGUF" (ErrNotGGUF);
//   - the version is not 0, not 1, not above 3, and its low 16 bits are not all zero (a file
//     of the other byte order) (ErrVersion);
//   - n_tensors is in [0, SIZE_MAX/sizeof(gguf_tensor_info)] and n_kv in
//     [0, SIZE_MAX/sizeof(gguf_kv)] (ErrCorrupt);
//   - every string length is at most GGUF_MAX_STRING_LENGTH (1 GiB; ErrCorrupt) and at most
//     the bytes remaining (ErrTruncated);
//   - every key is non-empty and unique (ErrCorrupt);
//   - every value type is one of the 13 gguf_type values; an array's element type is one of
//     them but not GGUF_TYPE_ARRAY (no nested arrays) (ErrCorrupt);
//   - an array's length is at most GGUF_MAX_ARRAY_ELEMENTS (2^30; ErrCorrupt), and its
//     elements (8 bytes per string for the length fields alone) fit in the bytes remaining
//     (ErrTruncated);
//   - general.alignment, if present, is a scalar u32 and a nonzero power of two (ErrCorrupt);
//   - every tensor name is shorter than GGML_MAX_NAME (64) bytes and unique as a C string
//     (ErrCorrupt);
//   - n_dims is at most GGML_MAX_DIMS (4), no dimension is negative, and the element count
//     is below INT64_MAX (ErrCorrupt);
//   - the tensor type is in [0, GGML_TYPE_COUNT) and not a removed type (block size 0 in
//     ggml.c's type_traits: 4, 5, 31-33, 36-38), the row length ne[0] is a multiple of the
//     type's block size, and the size in bytes fits in 64 bits (ErrCorrupt);
//   - when there are tensors, the data section (the end of the infos padded to the
//     alignment) starts within the file (ErrTruncated);
//   - each tensor's offset equals the sum of the sizes of the tensors before it, each padded
//     to the alignment, so offsets are aligned, in order and never overlap, and that sum does
//     not overflow (ErrCorrupt);
//
// and from llama.cpp's loader (llama_tensor_weight, src/llama-model-loader.h): every tensor's
// bytes lie within the file (ErrCorrupt and ErrTruncated both match: the file is "corrupted
// or incomplete").
//
// gguf_init_from_reader itself has no GGML_ASSERT or GGML_ABORT that a file can trigger (the
// bounds above are checked before each allocation and read), but llama.cpp aborts later on
// one property gguf.cpp does not check, which is checked here too: the tokens of
// tokenizer.ggml.tokens must be distinct as llama_vocab::impl::load sees them (C strings, an
// empty token renamed "[EMPTY_<id>]"), unless tokenizer.ggml.model is "no_vocab" or "none";
// otherwise its GGML_ASSERT(id_to_token.size() == token_to_id.size()) kills the process
// (ErrCorrupt). A single flipped bit in a token's text is enough to cause it. Likewise, for a
// file with tensors whose architecture is not "clip", a u32 "<arch>.block_count" must be in
// [1, 512] and a u32 "<arch>.nextn_predict_layers" at most the block count: the first
// GGML_ASSERTs of llama_model_base::load_hparams, common to every architecture.
//
// The many other hyperparameter assertions of llama.cpp (expert counts, per-architecture
// shapes) are not checked: they depend on the architecture, and their keys' meaning is beyond
// the file's structure.
//
// Every read that runs past the end of the file is ErrTruncated. A header whose counts
// cannot fit in the rest of the file (at least 14 bytes per key-value pair, 24 per tensor
// info) fails at once, and no slice is allocated for a count or length before the rest of
// the file is known to hold it, so a count of 2^60 or a string length of 2^63 costs nothing
// and memory stays proportional to the file's size.
//
// # Where this is stricter than gguf.cpp
//
// gguf.cpp computes a tensor's element count (ggml_nelements) and byte size (ggml_nbytes)
// with products that can overflow before its checks see them: a shape such as
// [2^32, 2^32] wraps to 0 elements and passes, with a byte size of 0. This package computes
// both exactly and refuses such shapes. No file gguf.cpp reads correctly is refused: the
// difference only concerns tensors of more than 2^63 elements or 2^64 bytes.
//
// # Not checked
//
// Tensor data are not read, so their values (NaNs, bad quantization scales) are not checked.
// Nor are the metadata's meaning (hyperparameters, tokenizer arrays) or the tensors' names
// and shapes against an architecture: llama.cpp's loader checks those, mostly with
// exceptions rather than aborts.
package gguf
