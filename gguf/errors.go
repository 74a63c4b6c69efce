package gguf

import (
	"errors"
	"fmt"
)

// Sentinel errors, testable with errors.Is. Every parse failure is a *FormatError whose Err is
// (or wraps) one of them; errors from the file system (a missing or unreadable file) are
// returned wrapped as they come, so errors.Is(err, fs.ErrNotExist) and fs.ErrPermission work.
var (
	// ErrNotGGUF: the input is not a GGUF file at all: shorter than the 4-byte magic, a magic
	// other than "GGUF" (gguf_init_from_reader: "failed to read magic" / "invalid magic
	// characters"), a zero-length file, a directory or another non-regular file.
	ErrNotGGUF = errors.New("not a GGUF file")

	// ErrVersion: the header's version is one gguf.cpp refuses (gguf_init_from_reader): 0, 1
	// (GGUFv1, no longer supported), a value whose low 16 bits are zero (a file of the other
	// byte order), or a version above 3 (GGUF_VERSION). Versions 2 and 3 are accepted.
	ErrVersion = errors.New("unsupported GGUF version")

	// ErrTruncated: the file ends inside a structure: a header field, a key, a value, an array,
	// a tensor info, the padding before the data section, or a counted list whose entries
	// cannot all fit in the bytes left (gguf_reader::read failing on nbytes_remain).
	ErrTruncated = errors.New("truncated GGUF file")

	// ErrCorrupt: a value no valid GGUF file holds: a count or length over gguf.cpp's limits,
	// an empty or duplicate key, an invalid or nested value type, a bad general.alignment, a
	// bad tensor name, shape, type or offset, tensor data outside the file, or two equal
	// tokens in tokenizer.ggml.tokens (on which llama.cpp aborts). Tensor data past the end of
	// the file wraps both ErrCorrupt and ErrTruncated, as llama.cpp's own message says
	// ("model is corrupted or incomplete").
	ErrCorrupt = errors.New("corrupt GGUF file")
)

// errOutOfFile is the Err of a tensor whose data extends past the end of the file: the file
// may have been cut short (ErrTruncated) or the tensor's shape or offset damaged (ErrCorrupt);
// both sentinels match.
var errOutOfFile = fmt.Errorf("%w or %w", ErrCorrupt, ErrTruncated)

// FormatError says where a GGUF file is malformed and how. Use errors.As to get it and
// errors.Is on the whole error to classify it (ErrNotGGUF, ErrVersion, ErrTruncated,
// ErrCorrupt, or an I/O error from the reader).
type FormatError struct {
	// Path is the file's path as given to Open, or the name given with WithName to Read
	// (empty when none was given).
	Path string
	// Offset is the byte offset, from the start of the file, of the field found wrong (for a
	// count that the rest of the file cannot hold, the count's own offset).
	Offset int64
	// What describes the problem in words, naming the key or tensor involved.
	What string
	// Err is the sentinel (or the reader's I/O error) the problem falls under.
	Err error
}

// Error formats the error as "gguf: PATH: offset N (0xN): WHAT: ERR".
func (e *FormatError) Error() string {
	p := ""
	if e.Path != "" {
		p = e.Path + ": "
	}
	return fmt.Sprintf("gguf: %soffset %d (%#x): %s: %v", p, e.Offset, e.Offset, e.What, e.Err)
}

// Unwrap returns Err, so errors.Is and errors.As see the sentinel.
func (e *FormatError) Unwrap() error { return e.Err }
