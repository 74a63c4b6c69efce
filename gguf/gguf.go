package gguf

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// File is a validated GGUF header: the metadata key-value pairs and the tensor infos, with the
// data section's place in the file. Tensor data is not read. A File is immutable and safe for
// concurrent use.
type File struct {
	// Path is the path given to Open, or the name given to Read with WithName.
	Path string
	// Size is the file's size in bytes.
	Size int64
	// Version is the format version from the header: 2 or 3.
	Version uint32
	// Alignment is the data alignment in bytes: general.alignment, or DefaultAlignment (32)
	// when the key is absent. It is a power of two.
	Alignment int64
	// DataOffset is the byte offset of the data section from the start of the file
	// (gguf_get_data_offset): the end of the tensor infos, padded to Alignment when the file
	// has tensors and not padded when it has none, as gguf_init_from_reader does.
	DataOffset int64
	// DataSize is the size in bytes of the data section as gguf.cpp computes it (the sum of the
	// tensors' sizes each padded to Alignment). The file may end before DataOffset+DataSize by
	// the last tensor's padding; llama.cpp's loader only needs each tensor's own bytes.
	DataSize int64
	// KVs are the metadata key-value pairs in file order.
	KVs []KV
	// Tensors are the tensor infos in file order; their data lie in file order too.
	Tensors []TensorInfo

	index   map[string]int // C-string of a key -> first KV with it (gguf_find_key)
	tensors map[string]int // tensor name -> index
}

// KV is one metadata key-value pair.
type KV struct {
	// Key is the key as stored (non-empty, unique in the file; usually dotted ASCII like
	// "general.architecture").
	Key string
	// Type is the value's type; for an array, the element type (never TypeArray).
	Type ValueType
	// Array reports whether the value is an array.
	Array bool
	// Value holds the value with its Go type: uint8, int8, uint16, int16, uint32, int32,
	// float32, bool, string, uint64, int64 or float64 for a scalar, and a slice of one of
	// those ([]string for an array of strings) for an array. A bool is any nonzero byte, as
	// gguf.cpp reads it.
	Value any
	// Offset is the byte offset of the pair (its key's length field) in the file.
	Offset int64
}

// Len returns the number of elements of an array value, or 1 for a scalar.
func (kv KV) Len() int {
	if !kv.Array {
		return 1
	}
	switch v := kv.Value.(type) {
	case []uint8:
		return len(v)
	case []int8:
		return len(v)
	case []uint16:
		return len(v)
	case []int16:
		return len(v)
	case []uint32:
		return len(v)
	case []int32:
		return len(v)
	case []float32:
		return len(v)
	case []bool:
		return len(v)
	case []string:
		return len(v)
	case []uint64:
		return len(v)
	case []int64:
		return len(v)
	case []float64:
		return len(v)
	}
	return 0
}

// TypeName returns the value's type as llama.cpp prints it: "u32", "str", or "arr[str,N]"
// for an array of N strings.
func (kv KV) TypeName() string {
	if kv.Array {
		return fmt.Sprintf("arr[%s,%d]", kv.Type, kv.Len())
	}
	return kv.Type.String()
}

// TensorInfo describes one tensor: its name, type, shape and where its data lie.
type TensorInfo struct {
	// Name is the tensor's name as ggml holds it (ggml_set_name): at most MaxNameLength-1
	// bytes, cut at the first NUL byte if the stored name has one.
	Name string
	// Type is the element type.
	Type GGMLType
	// Dims is the shape, fastest-varying dimension first (ggml's ne[0], ne[1], ...), with as
	// many entries as the file gives (0 to MaxDims); every entry is >= 0 (a zero makes an
	// empty tensor, which gguf.cpp accepts).
	Dims []int64
	// Offset is the data's offset in bytes from DataOffset, as stored; a multiple of the
	// alignment.
	Offset int64
	// FileOffset is the data's offset in bytes from the start of the file
	// (File.DataOffset+Offset).
	FileOffset int64
	// Size is the data's size in bytes (ggml_nbytes): elements/BlockSize*TypeSize, 0 for an
	// empty tensor.
	Size int64
	// InfoOffset is the byte offset of the tensor's info record (its name's length field).
	InfoOffset int64

	offsetField int64 // byte offset of the stored data offset field
}

// Shape returns the shape padded to MaxDims with ones, as ggml's ne.
func (t TensorInfo) Shape() [MaxDims]int64 {
	ne := [MaxDims]int64{1, 1, 1, 1}
	copy(ne[:], t.Dims)
	return ne
}

// Elements returns the number of elements (ggml_nelements), the product of Dims.
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

// Option tunes Open and Read.
type Option func(*config)

type config struct {
	name        string
	maxString   uint64
	maxElements uint64
}

// WithName sets the name Read reports in FormatError.Path and File.Path (Open uses the path).
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithMaxStringLength lowers the longest string accepted, in bytes, below gguf.cpp's
// MaxStringLength (1 GiB); a longer string is ErrCorrupt. Values above MaxStringLength are
// clamped to it: a file gguf.cpp would refuse is never accepted.
func WithMaxStringLength(n uint64) Option {
	return func(c *config) { c.maxString = min(n, MaxStringLength) }
}

// WithMaxArrayElements lowers the largest array element count accepted below gguf.cpp's
// MaxArrayElements (2^30); a longer array is ErrCorrupt. Values above MaxArrayElements are
// clamped to it.
func WithMaxArrayElements(n uint64) Option {
	return func(c *config) { c.maxElements = min(n, MaxArrayElements) }
}

func newConfig(opts []Option) config {
	c := config{maxString: MaxStringLength, maxElements: MaxArrayElements}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Open reads and validates the GGUF file at path; see Read for what is checked. Tensor data
// are not read, only located.
//
// A missing or unreadable file returns the *os.PathError from os.Open wrapped (errors.Is with
// fs.ErrNotExist or fs.ErrPermission); a directory, a non-regular file or an empty file
// returns a *FormatError wrapping ErrNotGGUF; a malformed file a *FormatError wrapping
// ErrNotGGUF, ErrVersion, ErrTruncated or ErrCorrupt; an I/O error while reading a
// *FormatError wrapping that error.
func Open(path string, opts ...Option) (*File, error) {
	c := newConfig(opts)
	c.name = path
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if st.IsDir() {
		return nil, &FormatError{Path: path, What: "is a directory", Err: ErrNotGGUF}
	}
	if !st.Mode().IsRegular() {
		return nil, &FormatError{Path: path, What: fmt.Sprintf("is not a regular file (mode %v)", st.Mode()), Err: ErrNotGGUF}
	}
	return parse(fh, st.Size(), c)
}

// Read reads and validates a GGUF file of size bytes from r, which must hold at least size
// bytes; r is read from offset 0 and only up to the end of the tensor infos.
//
// It makes every check gguf_init_from_reader (ggml/src/gguf.cpp; gguf_init_from_file and
// gguf_init_from_file_ptr call it) makes on the header, the key-value pairs and the tensor
// infos, the type checks of ggml.c's type_traits, llama.cpp's per-tensor bounds check
// (llama_tensor_weight in src/llama-model-loader.h) and the distinct-tokens assertion of
// llama_vocab::impl::load; the package documentation lists them.
// It never allocates for a count or length before checking that the rest of the file can
// hold it, so memory use stays proportional to size.
//
// Errors are *FormatError values wrapping ErrNotGGUF, ErrVersion, ErrTruncated or
// ErrCorrupt (or the reader's I/O error), with the byte offset of the field at fault. A size
// of 0 is ErrNotGGUF.
func Read(r io.ReaderAt, size int64, opts ...Option) (*File, error) {
	return parse(r, size, newConfig(opts))
}

// TensorCount returns the number of tensors (gguf_get_n_tensors). llama.cpp's vocab-only
// files have none.
func (f *File) TensorCount() int { return len(f.Tensors) }

// KVCount returns the number of metadata key-value pairs (gguf_get_n_kv).
func (f *File) KVCount() int { return len(f.KVs) }

// Keys returns the metadata keys in file order (a fresh slice).
func (f *File) Keys() []string {
	keys := make([]string, len(f.KVs))
	for i, kv := range f.KVs {
		keys[i] = kv.Key
	}
	return keys
}

// Lookup returns the key-value pair with the given key, as gguf_find_key finds it: keys are
// compared as C strings (up to a first NUL byte), and the first match in file order wins.
func (f *File) Lookup(key string) (KV, bool) {
	i, ok := f.index[cString(key)]
	if !ok {
		return KV{}, false
	}
	return f.KVs[i], true
}

// String returns the value of a scalar string key; false if the key is absent or holds
// another type.
func (f *File) String(key string) (string, bool) {
	kv, ok := f.Lookup(key)
	if !ok || kv.Array {
		return "", false
	}
	s, ok := kv.Value.(string)
	return s, ok
}

// Strings returns the value of an array-of-strings key (e.g. "tokenizer.ggml.tokens"); false
// if the key is absent or holds another type. The slice is shared: do not modify it.
func (f *File) Strings(key string) ([]string, bool) {
	kv, ok := f.Lookup(key)
	if !ok || !kv.Array {
		return nil, false
	}
	s, ok := kv.Value.([]string)
	return s, ok
}

// Uint32 returns the value of a scalar u32 key, with no conversion from other types (as
// gguf_get_val_u32 requires); false if the key is absent or holds another type.
func (f *File) Uint32(key string) (uint32, bool) {
	kv, ok := f.Lookup(key)
	if !ok || kv.Array {
		return 0, false
	}
	v, ok := kv.Value.(uint32)
	return v, ok
}

// Uint64 returns the value of a scalar u64 key, with no conversion; false if the key is
// absent or holds another type.
func (f *File) Uint64(key string) (uint64, bool) {
	kv, ok := f.Lookup(key)
	if !ok || kv.Array {
		return 0, false
	}
	v, ok := kv.Value.(uint64)
	return v, ok
}

// Int returns the value of a scalar integer key of any integer type (u8 to i64) as an int64;
// false if the key is absent, holds a non-integer, or holds a u64 above math.MaxInt64.
func (f *File) Int(key string) (int64, bool) {
	kv, ok := f.Lookup(key)
	if !ok || kv.Array {
		return 0, false
	}
	switch v := kv.Value.(type) {
	case uint8:
		return int64(v), true
	case int8:
		return int64(v), true
	case uint16:
		return int64(v), true
	case int16:
		return int64(v), true
	case uint32:
		return int64(v), true
	case int32:
		return int64(v), true
	case int64:
		return v, true
	case uint64:
		if v > math.MaxInt64 {
			return 0, false
		}
		return int64(v), true
	}
	return 0, false
}

// Float returns the value of a scalar f32 or f64 key as a float64; false if the key is absent
// or holds another type.
func (f *File) Float(key string) (float64, bool) {
	kv, ok := f.Lookup(key)
	if !ok || kv.Array {
		return 0, false
	}
	switch v := kv.Value.(type) {
	case float32:
		return float64(v), true
	case float64:
		return v, true
	}
	return 0, false
}

// Bool returns the value of a scalar bool key; false if the key is absent or holds another
// type.
func (f *File) Bool(key string) (value, ok bool) {
	kv, found := f.Lookup(key)
	if !found || kv.Array {
		return false, false
	}
	value, ok = kv.Value.(bool)
	return value, ok
}

// Architecture returns general.architecture (e.g. "llama"), or "" when the key is absent or
// not a string.
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// ChatTemplate returns the default chat template (tokenizer.chat_template); false when the
// file has none.
func (f *File) ChatTemplate() (string, bool) { return f.String("tokenizer.chat_template") }

// ChatTemplates returns the named chat templates (keys "tokenizer.chat_template.NAME", e.g.
// "tool_use"), keyed by NAME; an empty map when there are none. The default template is not
// included (see ChatTemplate).
func (f *File) ChatTemplates() map[string]string {
	const prefix = "tokenizer.chat_template."
	out := map[string]string{}
	for _, kv := range f.KVs {
		if name, ok := strings.CutPrefix(kv.Key, prefix); ok && name != "" && !kv.Array {
			if s, ok := kv.Value.(string); ok {
				out[name] = s
			}
		}
	}
	return out
}

// Tensor returns the tensor with the given name (gguf_find_tensor); false if there is none.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensors[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.Tensors[i], true
}

// cString returns s up to its first NUL byte: what a C function comparing c_str() sees.
func cString(s string) string {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return s[:i]
	}
	return s
}
