package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// The parser reads the file in chunks that start at minChunk bytes and double up to maxChunk,
// so a small or damaged file costs little and a large vocabulary few reads.
const (
	minChunk = 64 << 10
	maxChunk = 1 << 20
)

// parser reads a GGUF file sequentially through a buffer over an io.ReaderAt, as gguf_reader
// does over its callback: off is the next byte, size-off the bytes remaining (nbytes_remain).
type parser struct {
	r    io.ReaderAt
	size int64
	cfg  config

	off    int64  // absolute offset of the next byte to read
	buf    []byte // buffered bytes, starting at bufOff
	bufOff int64
	chunk  uint64 // size of the next buffer fill

	// The structure being read, for error messages: "key-value pair" or "tensor", its index
	// and its key or name once known. Kept raw so that no message is built unless needed.
	kind  string
	index uint64
	name  string
	named bool
}

// fail returns a *FormatError at offset off, naming the structure being read.
func (p *parser) fail(off int64, err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	switch {
	case p.kind != "" && p.named:
		what = fmt.Sprintf("%s %d %q: %s", p.kind, p.index, p.name, what)
	case p.kind != "":
		what = fmt.Sprintf("%s %d: %s", p.kind, p.index, what)
	}
	return &FormatError{Path: p.cfg.name, Offset: off, What: what, Err: err}
}

// at records the structure being read for error messages.
func (p *parser) at(kind string, index uint64) {
	p.kind, p.index, p.name, p.named = kind, index, "", false
}

// setName records the key or name of the structure being read.
func (p *parser) setName(name string) { p.name, p.named = name, true }

func (p *parser) remaining() uint64 { return uint64(p.size - p.off) }

// take returns the next n bytes and advances past them. The slice is valid until the next
// call. what names the field for the error when fewer than n bytes remain (ErrTruncated).
func (p *parser) take(n uint64, what string) ([]byte, error) {
	if n > p.remaining() {
		return nil, p.fail(p.off, ErrTruncated, "%s: needs %d bytes, only %d remain", what, n, p.remaining())
	}
	if n == 0 {
		return nil, nil
	}
	end := p.bufOff + int64(len(p.buf))
	if p.off >= p.bufOff && p.off+int64(n) <= end {
		b := p.buf[p.off-p.bufOff : p.off-p.bufOff+int64(n)]
		p.off += int64(n)
		return b, nil
	}
	if n > maxChunk {
		return p.takeLong(n, what)
	}
	p.chunk = max(p.chunk, minChunk)
	fill := min(max(n, p.chunk), p.remaining())
	if p.chunk < maxChunk {
		p.chunk *= 2
	}
	if uint64(cap(p.buf)) < fill {
		p.buf = make([]byte, fill)
	}
	b := p.buf[:fill]
	got, err := p.r.ReadAt(b, p.off)
	if uint64(got) < n {
		return nil, p.readErr(p.off+int64(got), err, what)
	}
	p.buf = b[:got]
	p.bufOff = p.off
	p.off += int64(n)
	return b[:n], nil
}

// takeLong reads n > maxChunk bytes (a long string) into a fresh slice that grows as the
// bytes arrive, so that a reader holding less than its declared size cannot make the parser
// allocate what it claimed.
func (p *parser) takeLong(n uint64, what string) ([]byte, error) {
	var b []byte
	for uint64(len(b)) < n {
		start := len(b)
		k := int(min(n-uint64(start), max(maxChunk, uint64(start))))
		b = slices.Grow(b, k)[:start+k]
		got, err := p.r.ReadAt(b[start:], p.off+int64(start))
		if got < k {
			return nil, p.readErr(p.off+int64(start+got), err, what)
		}
	}
	p.off += int64(n)
	return b, nil
}

// readErr reports a short read at off: ErrTruncated when the reader ended early (it holds
// fewer bytes than the declared size), else the reader's error.
func (p *parser) readErr(off int64, err error, what string) error {
	if err == nil || errors.Is(err, io.EOF) {
		return p.fail(off, ErrTruncated, "%s: the input ends at %d, before its declared size %d", what, off, p.size)
	}
	return p.fail(off, err, "%s: read error", what)
}

func (p *parser) u32(what string) (uint32, error) {
	b, err := p.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (p *parser) u64(what string) (uint64, error) {
	b, err := p.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// str reads a string as gguf_reader::read(std::string &): a u64 length, refused above
// GGUF_MAX_STRING_LENGTH (ErrCorrupt) or above the bytes remaining (ErrTruncated), then the
// bytes, with no terminator and no encoding check.
func (p *parser) str(what string) (string, error) {
	at := p.off
	n, err := p.u64(what)
	if err != nil {
		return "", err
	}
	if n > p.cfg.maxString {
		return "", p.fail(at, ErrCorrupt, "%s: string length %d exceeds the maximum %d", what, n, p.cfg.maxString)
	}
	if n > p.remaining() {
		return "", p.fail(at, ErrTruncated, "%s: string length %d exceeds the %d bytes remaining", what, n, p.remaining())
	}
	b, err := p.take(n, what)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// parse reads the whole header, mirroring gguf_init_from_reader step by step, then checks
// each tensor's data against the file's end as llama_tensor_weight does.
func parse(r io.ReaderAt, size int64, cfg config) (*File, error) {
	p := &parser{r: r, size: size, cfg: cfg}
	// Magic (gguf_init_from_reader: "failed to read magic", "invalid magic characters").
	if size < int64(len(Magic)) {
		return nil, p.fail(0, ErrNotGGUF, "the input is %d bytes, too short for the magic", size)
	}
	f := &File{Path: cfg.name, Size: size, Alignment: DefaultAlignment}
	magic, err := p.take(uint64(len(Magic)), "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, p.fail(0, ErrNotGGUF, "magic is %q, want %q", magic, Magic)
	}

	// Version.
	if f.Version, err = p.u32("version"); err != nil {
		return nil, err
	}
	switch v := f.Version; {
	case v == 0:
		return nil, p.fail(4, ErrVersion, "version 0")
	case v&0xFFFF == 0:
		return nil, p.fail(4, ErrVersion, "version %d (%#x) is implausibly large: a file of the other byte order?", v, v)
	case v == 1:
		return nil, p.fail(4, ErrVersion, "GGUFv1 is no longer supported")
	case v > MaxVersion:
		return nil, p.fail(4, ErrVersion, "version %d is newer than %d, the newest llama.cpp reads", v, MaxVersion)
	}

	// Counts (int64 in the file; negative values are refused).
	nTensors, err := p.u64("tensor count")
	if err != nil {
		return nil, err
	}
	if nTensors > maxTensors { // also catches a negative int64
		return nil, p.fail(8, ErrCorrupt, "tensor count %d is outside [0, %d]", int64(nTensors), maxTensors)
	}
	nKV, err := p.u64("key-value count")
	if err != nil {
		return nil, err
	}
	if nKV > maxKV {
		return nil, p.fail(16, ErrCorrupt, "key-value count %d is outside [0, %d]", int64(nKV), maxKV)
	}
	// Fail fast, before any allocation, when the counts cannot fit in the bytes left: gguf.cpp
	// would run out of file in its loops, the same outcome after more work. Neither product
	// overflows (maxKV*14 and maxTensors*24 are below 2^62).
	if needKV := nKV * minKVBytes; needKV > p.remaining() {
		return nil, p.fail(16, ErrTruncated, "%d key-value pairs need at least %d bytes, only %d remain", nKV, needKV, p.remaining())
	} else if need := needKV + nTensors*minTensorInfoBytes; need > p.remaining() {
		return nil, p.fail(8, ErrTruncated, "%d key-value pairs and %d tensor infos need at least %d bytes, only %d remain", nKV, nTensors, need, p.remaining())
	}

	if err := p.readKVs(f, nKV); err != nil {
		return nil, err
	}
	if err := p.alignment(f); err != nil {
		return nil, err
	}
	if err := p.readTensorInfos(f, nTensors); err != nil {
		return nil, err
	}
	if err := p.dataSection(f); err != nil {
		return nil, err
	}
	if err := p.vocabulary(f); err != nil {
		return nil, err
	}
	if err := p.layers(f); err != nil {
		return nil, err
	}
	return f, nil
}

// readKVs reads the key-value pairs, mirroring gguf_init_from_reader's KV loop and
// gguf_read_emplace_helper.
func (p *parser) readKVs(f *File, n uint64) error {
	seen := make(map[string]uint64, min(n, 1024))
	f.index = make(map[string]int, min(n, 1024))
	for i := uint64(0); i < n; i++ {
		p.at("key-value pair", i)
		start := p.off
		key, err := p.str("key")
		if err != nil {
			return err
		}
		if key == "" {
			return p.fail(start, ErrCorrupt, "the key is empty")
		}
		p.setName(key)
		if j, dup := seen[key]; dup {
			return p.fail(start, ErrCorrupt, "duplicate key (also key-value pair %d)", j)
		}
		seen[key] = i

		kv := KV{Key: key, Offset: start}
		typeAt := p.off
		t, err := p.u32("value type")
		if err != nil {
			return err
		}
		kv.Type = ValueType(int32(t))
		count := uint64(1)
		countAt := int64(0)
		if kv.Type == TypeArray {
			kv.Array = true
			typeAt = p.off
			if t, err = p.u32("array element type"); err != nil {
				return err
			}
			kv.Type = ValueType(int32(t))
			countAt = p.off
			if count, err = p.u64("array length"); err != nil {
				return err
			}
		}
		if kv.Type < 0 || kv.Type >= typeCount || kv.Type == TypeArray {
			what := "value type"
			if kv.Array {
				what = "array element type (arrays of arrays are not allowed)"
			}
			return p.fail(typeAt, ErrCorrupt, "invalid %s %d", what, int32(kv.Type))
		}
		if kv.Array {
			kv.Value, err = p.array(kv.Type, count, countAt)
		} else {
			kv.Value, err = p.scalar(kv.Type)
		}
		if err != nil {
			return err
		}
		if c := cString(key); !hasKey(f.index, c) {
			f.index[c] = len(f.KVs)
		}
		f.KVs = append(f.KVs, kv)
	}
	p.at("", 0)
	return nil
}

func hasKey(m map[string]int, k string) bool {
	_, ok := m[k]
	return ok
}

// scalar reads one value of type t (gguf_reader::read(T &)).
func (p *parser) scalar(t ValueType) (any, error) {
	if t == TypeString {
		return p.str("value")
	}
	b, err := p.take(uint64(t.Size()), "value")
	if err != nil {
		return nil, err
	}
	le := binary.LittleEndian
	switch t {
	case TypeUint8:
		return b[0], nil
	case TypeInt8:
		return int8(b[0]), nil
	case TypeBool:
		return b[0] != 0, nil
	case TypeUint16:
		return le.Uint16(b), nil
	case TypeInt16:
		return int16(le.Uint16(b)), nil
	case TypeUint32:
		return le.Uint32(b), nil
	case TypeInt32:
		return int32(le.Uint32(b)), nil
	case TypeFloat32:
		return math.Float32frombits(le.Uint32(b)), nil
	case TypeUint64:
		return le.Uint64(b), nil
	case TypeInt64:
		return int64(le.Uint64(b)), nil
	case TypeFloat64:
		return math.Float64frombits(le.Uint64(b)), nil
	}
	panic("gguf: scalar of type " + t.String()) // unreachable: readKVs checked t
}

// array reads n elements of type t (gguf_reader::read(std::vector<T> &, n)): n above
// GGUF_MAX_ARRAY_ELEMENTS is ErrCorrupt; n elements that cannot fit in the bytes remaining
// (n*8 for strings, whose length fields alone take 8 bytes each) are ErrTruncated. Only then
// is the slice allocated, so its size is bounded by the file's.
func (p *parser) array(t ValueType, n uint64, countAt int64) (any, error) {
	if n > p.cfg.maxElements {
		return nil, p.fail(countAt, ErrCorrupt, "array length %d exceeds the maximum %d", n, p.cfg.maxElements)
	}
	elem := uint64(t.Size())
	if t == TypeString {
		elem = 8
	}
	if need := n * elem; need > p.remaining() { // n <= 2^30, elem <= 8: no overflow
		return nil, p.fail(countAt, ErrTruncated, "an array of %d %s needs at least %d bytes, only %d remain", n, t, need, p.remaining())
	}
	le := binary.LittleEndian
	switch t {
	case TypeString:
		return p.strings(n)
	case TypeUint8:
		return readArray(p, n, 1, func(b []byte) uint8 { return b[0] })
	case TypeInt8:
		return readArray(p, n, 1, func(b []byte) int8 { return int8(b[0]) })
	case TypeBool:
		return readArray(p, n, 1, func(b []byte) bool { return b[0] != 0 })
	case TypeUint16:
		return readArray(p, n, 2, le.Uint16)
	case TypeInt16:
		return readArray(p, n, 2, func(b []byte) int16 { return int16(le.Uint16(b)) })
	case TypeUint32:
		return readArray(p, n, 4, le.Uint32)
	case TypeInt32:
		return readArray(p, n, 4, func(b []byte) int32 { return int32(le.Uint32(b)) })
	case TypeFloat32:
		return readArray(p, n, 4, func(b []byte) float32 { return math.Float32frombits(le.Uint32(b)) })
	case TypeUint64:
		return readArray(p, n, 8, le.Uint64)
	case TypeInt64:
		return readArray(p, n, 8, func(b []byte) int64 { return int64(le.Uint64(b)) })
	case TypeFloat64:
		return readArray(p, n, 8, func(b []byte) float64 { return math.Float64frombits(le.Uint64(b)) })
	}
	panic("gguf: array of type " + t.String()) // unreachable: readKVs checked t
}

// strings reads an array of n strings, checked as str checks one. Their bytes are copied into
// a few shared blocks rather than one allocation each (a vocabulary has 10^5 or more); a new
// block is as large as the bytes read so far, within [the string's length, 64 KiB], so the
// memory used stays within twice the bytes read.
func (p *parser) strings(n uint64) ([]string, error) {
	const maxBlock = 64 << 10
	out := make([]string, n)
	var arena strings.Builder
	var read uint64
	for i := range out {
		at := p.off
		l, err := p.u64("array element")
		if err != nil {
			return nil, err
		}
		if l > p.cfg.maxString {
			return nil, p.fail(at, ErrCorrupt, "array element %d: string length %d exceeds the maximum %d", i, l, p.cfg.maxString)
		}
		if l > p.remaining() {
			return nil, p.fail(at, ErrTruncated, "array element %d: string length %d exceeds the %d bytes remaining", i, l, p.remaining())
		}
		b, err := p.take(l, "array element")
		if err != nil {
			return nil, err
		}
		read += l
		if uint64(arena.Cap()-arena.Len()) < l {
			// A fresh builder: the strings already cut from the old one keep its memory.
			arena = strings.Builder{}
			arena.Grow(int(max(l, min(read, maxBlock))))
		}
		start := arena.Len()
		arena.Write(b)
		// String does not copy, and writes within the capacity leave earlier bytes alone.
		out[i] = arena.String()[start:]
	}
	return out, nil
}

// readArray reads n fixed-size elements in chunks of at most maxChunk bytes.
func readArray[T any](p *parser, n uint64, size uint64, dec func([]byte) T) ([]T, error) {
	out := make([]T, n)
	per := maxChunk / size
	for i := uint64(0); i < n; {
		k := min(per, n-i)
		b, err := p.take(k*size, "array elements")
		if err != nil {
			return nil, err
		}
		for j := uint64(0); j < k; j++ {
			out[i+j] = dec(b[j*size:])
		}
		i += k
	}
	return out, nil
}

// alignment applies general.alignment as gguf_init_from_reader does: the key (found as
// gguf_find_key finds it) must be a scalar u32, and its value a nonzero power of two.
func (p *parser) alignment(f *File) error {
	i, ok := f.index[AlignmentKey]
	if !ok {
		return nil
	}
	kv := f.KVs[i]
	if kv.Array || kv.Type != TypeUint32 {
		return p.fail(kv.Offset, ErrCorrupt, "key %q must be of type u32 but is %s", kv.Key, kv.TypeName())
	}
	a := kv.Value.(uint32)
	if a == 0 || a&(a-1) != 0 {
		return p.fail(kv.Offset, ErrCorrupt, "key %q: alignment %d is not a power of 2", kv.Key, a)
	}
	f.Alignment = int64(a)
	return nil
}

// readTensorInfos reads the tensor infos, mirroring gguf_init_from_reader's tensor loop.
func (p *parser) readTensorInfos(f *File, n uint64) error {
	f.tensors = make(map[string]int, min(n, 1024))
	for i := uint64(0); i < n; i++ {
		p.at("tensor", i)
		start := p.off
		raw, err := p.str("name")
		if err != nil {
			return err
		}
		// gguf.cpp checks the stored length, then ggml_set_name copies it as a C string, and
		// compares names as C strings.
		if len(raw) >= MaxNameLength {
			return p.fail(start, ErrCorrupt, "the name is %d bytes long, must be under %d (GGML_MAX_NAME)", len(raw), MaxNameLength)
		}
		name := cString(raw)
		p.setName(name)
		if j, dup := f.tensors[name]; dup {
			return p.fail(start, ErrCorrupt, "duplicate tensor name (also tensor %d)", j)
		}
		t := TensorInfo{Name: name, InfoOffset: start}

		// Shape.
		dimsAt := p.off
		nDims, err := p.u32("dimension count")
		if err != nil {
			return err
		}
		if nDims > MaxDims {
			return p.fail(dimsAt, ErrCorrupt, "%d dimensions, more than %d (GGML_MAX_DIMS)", nDims, MaxDims)
		}
		t.Dims = make([]int64, nDims)
		for j := range t.Dims {
			at := p.off
			d, err := p.u64("dimension")
			if err != nil {
				return err
			}
			if int64(d) < 0 {
				return p.fail(at, ErrCorrupt, "dimension %d is %d, negative", j, int64(d))
			}
			t.Dims[j] = int64(d)
		}
		ne := t.Shape()
		// The element count must be below INT64_MAX, with gguf.cpp's expression (overflow-free
		// thanks to its short-circuit order). gguf.cpp skips the check when ggml_nelements, a
		// product that can overflow, is not positive; here it is skipped only when a
		// dimension is truly zero, so a shape whose product wraps is refused, not accepted.
		empty := ne[0] == 0 || ne[1] == 0 || ne[2] == 0 || ne[3] == 0
		if !empty && (math.MaxInt64/ne[1] <= ne[0] ||
			math.MaxInt64/ne[2] <= ne[0]*ne[1] ||
			math.MaxInt64/ne[3] <= ne[0]*ne[1]*ne[2]) {
			return p.fail(dimsAt, ErrCorrupt, "shape %v has INT64_MAX elements or more", t.Dims)
		}

		// Type.
		typeAt := p.off
		typ, err := p.u32("type")
		if err != nil {
			return err
		}
		t.Type = GGMLType(int32(typ))
		if t.Type < 0 || t.Type >= GGMLTypeCount {
			return p.fail(typeAt, ErrCorrupt, "invalid ggml type %d, should be in [0, %d)", int32(t.Type), GGMLTypeCount)
		}
		blck, tsize := t.Type.BlockSize(), t.Type.TypeSize()
		if blck == 0 {
			return p.fail(typeAt, ErrCorrupt, "ggml type %d (%s) is no longer supported", int32(t.Type), t.Type)
		}
		if ne[0]%blck != 0 {
			return p.fail(dimsAt, ErrCorrupt, "type %s with %d elements per row, not a multiple of the block size %d", t.Type, ne[0], blck)
		}
		var nel int64
		if !empty {
			nel = ne[0] * ne[1] * ne[2] * ne[3]
		}
		if uint64(nel/blck) > math.MaxUint64/uint64(tsize) {
			return p.fail(dimsAt, ErrCorrupt, "shape %v of type %s has a size in bytes above 2^64", t.Dims, t.Type)
		}
		// ggml_nbytes, computed without the overflow ggml's formula can hit for quantized
		// types with huge rows (ne[0]*type_size before dividing by the block size).
		nbytes := uint64(nel/blck) * uint64(tsize)

		// Data offset, relative to the data section.
		t.offsetField = p.off
		off, err := p.u64("data offset")
		if err != nil {
			return err
		}
		// dataSection checks both against the file's size; until then the int64 fields hold
		// the uint64 values bit for bit.
		t.Offset = int64(off)
		t.Size = int64(nbytes)
		f.tensors[name] = len(f.Tensors)
		f.Tensors = append(f.Tensors, t)
	}
	p.at("", 0)
	return nil
}

// dataSection places the data section and each tensor's data: the section starts at the end
// of the tensor infos padded to the alignment (when there are tensors), each tensor's offset
// must equal the padded sizes of the ones before it (gguf_init_from_reader), and its bytes
// must lie within the file (llama_tensor_weight).
func (p *parser) dataSection(f *File) error {
	align := uint64(f.Alignment)
	pos := uint64(p.off)
	if len(f.Tensors) > 0 {
		padded := (pos + align - 1) &^ (align - 1) // pos < 2^63, align <= 2^31: no overflow
		if padded > uint64(p.size) {
			return p.fail(p.off, ErrTruncated, "the data section would start at %d (padded to %d), past the end of the %d-byte file", padded, align, p.size)
		}
		pos = padded
	}
	f.DataOffset = int64(pos)

	var total uint64
	for i, t := range f.Tensors {
		p.at("tensor", uint64(i))
		p.setName(t.Name)
		off, nbytes := uint64(t.Offset), uint64(t.Size)
		if off != total {
			return p.fail(t.offsetField, ErrCorrupt, "data offset %d, expected %d (the padded sizes of the tensors before it)", off, total)
		}
		if nbytes > math.MaxUint64-(align-1) {
			return p.fail(t.offsetField, ErrCorrupt, "size %d overflows when padded", nbytes)
		}
		padded := (nbytes + align - 1) &^ (align - 1)
		sum, carry := bits.Add64(total, padded, 0)
		if carry != 0 {
			return p.fail(t.offsetField, ErrCorrupt, "size overflow, cannot accumulate size %d + %d", total, padded)
		}
		total = sum
	}

	for i := range f.Tensors {
		t := &f.Tensors[i]
		p.at("tensor", uint64(i))
		p.setName(t.Name)
		off, nbytes := uint64(t.Offset), uint64(t.Size)
		start, c1 := bits.Add64(pos, off, 0)
		end, c2 := bits.Add64(start, nbytes, 0)
		if c1 != 0 || c2 != 0 || end > uint64(p.size) {
			return p.fail(t.offsetField, errOutOfFile, "data (%d bytes at offset %d in the data section, which starts at %d) is not within the %d-byte file", nbytes, off, pos, p.size)
		}
		t.FileOffset = int64(start)
	}
	p.at("", 0)
	// Every tensor ends within the file and the offsets follow each other, so total is at
	// most size+align and fits an int64.
	f.DataSize = int64(total)
	return nil
}

// vocabulary checks the one property of the token list whose violation makes llama.cpp abort
// rather than fail: llama_vocab::impl::load maps each token's text (as a C string, an empty
// one renamed "[EMPTY_<index>]") to its id and then asserts, with GGML_ASSERT, that no two
// tokens had the same text. It checks tokenizer.ggml.tokens when it is an array of strings
// and tokenizer.ggml.model is not "no_vocab" or "none" (whose tokens llama.cpp never reads).
func (p *parser) vocabulary(f *File) error {
	i, ok := f.index[TokensKey]
	if !ok {
		return nil
	}
	kv := f.KVs[i]
	tokens, ok := kv.Value.([]string)
	if !ok || !kv.Array {
		return nil // llama.cpp throws "invalid gguf type" for anything else: no abort
	}
	if model, _ := f.String("tokenizer.ggml.model"); model == "no_vocab" || model == "none" {
		return nil
	}
	seen := make(map[string]int, len(tokens))
	for id, tok := range tokens {
		word := cString(tok)
		if word == "" {
			word = "[EMPTY_" + strconv.Itoa(id) + "]"
		}
		if first, dup := seen[word]; dup {
			// Locate the duplicate's length field: the elements follow the key, the type,
			// the element type and the count.
			at := kv.Offset + 8 + int64(len(kv.Key)) + 4 + 4 + 8
			for _, t := range tokens[:id] {
				at += 8 + int64(len(t))
			}
			p.at("key-value pair", uint64(i))
			p.setName(kv.Key)
			return p.fail(at, ErrCorrupt, "token %d has the same text %q as token %d (llama.cpp aborts on duplicate tokens)", id, word, first)
		}
		seen[word] = id
	}
	return nil
}

// layers checks the first hyperparameters llama.cpp asserts on for every architecture, in
// llama_model_base::load_hparams: GGML_ASSERT(n_layer_all > 0 && n_layer_all <=
// LLAMA_MAX_LAYERS) on "<arch>.block_count" and GGML_ASSERT(n_layer_nextn <= n_layer_all) on
// "<arch>.nextn_predict_layers". llama.cpp reads them only when it loads a model's weights
// (not vocab-only, not a "clip" projector), and only a u32 value (another type makes it
// throw, not abort), so the check applies to files with tensors and u32 values.
func (p *parser) layers(f *File) error {
	arch := f.Architecture()
	if f.TensorCount() == 0 || arch == "" || arch == "clip" {
		return nil
	}
	kv, ok := f.Lookup(arch + ".block_count")
	if !ok || kv.Array || kv.Type != TypeUint32 {
		return nil
	}
	n := kv.Value.(uint32)
	if n == 0 || n > MaxLayers {
		return p.fail(kv.Offset, ErrCorrupt, "key %q: %d layers, outside [1, %d] (llama.cpp aborts on it: LLAMA_MAX_LAYERS)", kv.Key, n, MaxLayers)
	}
	next, ok := f.Lookup(arch + ".nextn_predict_layers")
	if ok && !next.Array && next.Type == TypeUint32 && next.Value.(uint32) > n {
		return p.fail(next.Offset, ErrCorrupt, "key %q: %d next-token prediction layers, more than the %d layers (llama.cpp aborts on it)", next.Key, next.Value.(uint32), n)
	}
	return nil
}
