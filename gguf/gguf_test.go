package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
)

// sentinels are the errors every parse failure of in-memory input must match one of.
var sentinels = []error{ErrNotGGUF, ErrVersion, ErrTruncated, ErrCorrupt}

func isSentinel(err error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// readBytes parses an in-memory file.
func readBytes(data []byte, opts ...Option) (*File, error) {
	return Read(bytes.NewReader(data), int64(len(data)), opts...)
}

// checkInvariants asserts what every successfully parsed File guarantees.
func checkInvariants(t *testing.T, f *File) {
	t.Helper()
	require.NoError(t, invariants(f))
}

// invariants returns the first broken guarantee of a successfully parsed File, or nil.
func invariants(f *File) error {
	switch {
	case f.Alignment <= 0 || f.Alignment&(f.Alignment-1) != 0:
		return fmt.Errorf("alignment %d is not a power of two", f.Alignment)
	case f.Version != 2 && f.Version != 3:
		return fmt.Errorf("version %d", f.Version)
	case f.DataOffset > f.Size:
		return fmt.Errorf("data offset %d past the size %d", f.DataOffset, f.Size)
	case len(f.Keys()) != f.KVCount():
		return fmt.Errorf("%d keys for %d KVs", len(f.Keys()), f.KVCount())
	case f.TensorCount() > 0 && f.DataOffset%f.Alignment != 0:
		return fmt.Errorf("data offset %d not aligned to %d", f.DataOffset, f.Alignment)
	}
	for _, kv := range f.KVs {
		if kv.Key == "" || kv.Type < 0 || kv.Type >= typeCount || kv.Type == TypeArray || kv.Value == nil {
			return fmt.Errorf("bad KV %q %v %T", kv.Key, kv.Type, kv.Value)
		}
		if _, ok := f.Lookup(kv.Key); !ok {
			return fmt.Errorf("key %q not found", kv.Key)
		}
	}
	next := int64(0)
	for i, ti := range f.Tensors {
		switch {
		case ti.Offset != next:
			return fmt.Errorf("tensor %d %q offset %d, want %d", i, ti.Name, ti.Offset, next)
		case ti.Offset%f.Alignment != 0:
			return fmt.Errorf("tensor %q offset %d not aligned", ti.Name, ti.Offset)
		case ti.FileOffset != f.DataOffset+ti.Offset:
			return fmt.Errorf("tensor %q file offset %d", ti.Name, ti.FileOffset)
		case ti.Size < 0 || ti.FileOffset+ti.Size > f.Size:
			return fmt.Errorf("tensor %q data [%d, +%d) past the end %d", ti.Name, ti.FileOffset, ti.Size, f.Size)
		case len(ti.Dims) > MaxDims || len(ti.Name) >= MaxNameLength || !ti.Type.Supported():
			return fmt.Errorf("tensor %q: %d dims, type %v", ti.Name, len(ti.Dims), ti.Type)
		case ti.Elements() > 0 && ti.Elements()/ti.Type.BlockSize()*ti.Type.TypeSize() != ti.Size:
			return fmt.Errorf("tensor %q size %d for %d elements of %v", ti.Name, ti.Size, ti.Elements(), ti.Type)
		case ti.Elements() == 0 && ti.Size != 0:
			return fmt.Errorf("empty tensor %q has size %d", ti.Name, ti.Size)
		}
		if got, ok := f.Tensor(ti.Name); !ok || got.Name != ti.Name {
			return fmt.Errorf("tensor %q not found", ti.Name)
		}
		next = ti.Offset + (ti.Size+f.Alignment-1)/f.Alignment*f.Alignment
	}
	if next != f.DataSize {
		return fmt.Errorf("data size %d, want %d", f.DataSize, next)
	}
	return nil
}

type synthCase struct {
	name  string
	data  []byte
	want  error // nil: the file must parse
	off   int64 // the FormatError's expected Offset; -1: not checked
	check func(t *testing.T, f *File)
}

// synthCases are hand-made files, one per check gguf_init_from_reader (and the loader's
// bounds check) makes, each just on the failing and the passing side of it.
func synthCases() []synthCase {
	var cs []synthCase
	add := func(name string, data []byte, want error, off int64, check ...func(*testing.T, *File)) {
		c := synthCase{name: name, data: data, want: want, off: off}
		if len(check) > 0 {
			c.check = check[0]
		}
		cs = append(cs, c)
	}
	oneKV := func() *builder { return header(3, 0, 1) }
	oneTensor := func() *builder { return header(3, 1, 0) }
	const kvKey = 24 + 8 + 1 // offset just past a one-byte key of the first KV

	// Magic and version.
	add("empty", nil, ErrNotGGUF, 0)
	add("3 bytes", []byte("GGU"), ErrNotGGUF, 0)
	bad := header(3, 0, 0).bytes()
	copy(bad, "GGML")
	add("magic GGML", bad, ErrNotGGUF, 0)
	add("magic lowercase", append([]byte("gguf"), header(3, 0, 0).bytes()[4:]...), ErrNotGGUF, 0)
	add("magic only", []byte("GGUF"), ErrTruncated, 4)
	for _, v := range []uint32{0, 1, 4, 1000, 0x03000000, 0x00030000, math.MaxUint32} {
		add("version "+itoa(int64(v)), header(v, 0, 0).bytes(), ErrVersion, 4)
	}
	add("version 2", header(2, 0, 0).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, uint32(2), f.Version)
		assert.Equal(t, int64(24), f.DataOffset)
	})
	add("version 3, nothing else", header(3, 0, 0).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Zero(t, f.TensorCount())
		assert.Zero(t, f.KVCount())
		assert.Empty(t, f.Architecture())
	})
	add("no tensor count", header(3, 0, 0).bytes()[:12], ErrTruncated, 8)
	add("no kv count", header(3, 0, 0).bytes()[:20], ErrTruncated, 16)

	// Header counts.
	add("tensor count -1", header(3, math.MaxUint64, 0).bytes(), ErrCorrupt, 8)
	add("tensor count 2^63-1", header(3, math.MaxInt64, 0).bytes(), ErrCorrupt, 8)
	add("tensor count over gguf.cpp's bound", header(3, maxTensors+1, 0).bytes(), ErrCorrupt, 8)
	add("tensor count at gguf.cpp's bound", header(3, maxTensors, 0).bytes(), ErrTruncated, 8)
	add("tensor count 2^40", header(3, 1<<40, 0).zeros(100).bytes(), ErrTruncated, 8)
	add("kv count -1", header(3, 0, math.MaxUint64).bytes(), ErrCorrupt, 16)
	add("kv count 2^60", header(3, 0, 1<<60).bytes(), ErrCorrupt, 16)
	add("kv count over gguf.cpp's bound", header(3, 0, maxKV+1).bytes(), ErrCorrupt, 16)
	add("kv count 2^40", header(3, 0, 1<<40).zeros(100).bytes(), ErrTruncated, 16)
	add("kv count 2 with room for 1", header(3, 0, 2).kvU32("a", 1).bytes(), ErrTruncated, 16)

	// Keys.
	add("key length 2^63", oneKV().u64(1<<63).zeros(16).bytes(), ErrCorrupt, 24)
	add("key length 2^64-1", oneKV().u64(math.MaxUint64).zeros(16).bytes(), ErrCorrupt, 24)
	add("key length 2^30+1", oneKV().u64(MaxStringLength+1).zeros(16).bytes(), ErrCorrupt, 24)
	add("key length 2^30 past the end", oneKV().u64(MaxStringLength).zeros(16).bytes(), ErrTruncated, 24)
	add("key length 17 past the end", oneKV().u64(17).zeros(16).bytes(), ErrTruncated, 24)
	add("empty key", oneKV().str("").typ(TypeUint32).u32(0).bytes(), ErrCorrupt, 24)
	add("duplicate key", header(3, 0, 2).kvU32("a", 1).kvU32("a", 2).bytes(), ErrCorrupt, 24+8+1+4+4)
	add("keys equal as C strings are distinct", header(3, 0, 2).kvU32("a\x00x", 1).kvU32("a\x00y", 2).bytes(), nil, -1,
		func(t *testing.T, f *File) {
			v, ok := f.Uint32("a")
			assert.True(t, ok)
			assert.Equal(t, uint32(1), v, "gguf_find_key returns the first match")
			assert.Equal(t, []string{"a\x00x", "a\x00y"}, f.Keys())
		})

	// Value types.
	for _, typ := range []int32{13, 100, -1, math.MinInt32} {
		add("value type "+itoa(int64(typ)), oneKV().str("k").i32(typ).u32(0).bytes(), ErrCorrupt, kvKey)
	}
	add("array of arrays", oneKV().str("k").typ(TypeArray).typ(TypeArray).u64(0).bytes(), ErrCorrupt, kvKey+4)
	add("array of type 13", oneKV().str("k").typ(TypeArray).i32(13).u64(0).bytes(), ErrCorrupt, kvKey+4)
	add("array of type -1", oneKV().str("k").typ(TypeArray).i32(-1).u64(0).bytes(), ErrCorrupt, kvKey+4)
	add("truncated scalar", oneKV().str("k").typ(TypeUint64).u32(0).bytes(), ErrTruncated, kvKey+4)
	add("truncated type", header(3, 0, 2).kvU32("a", 1).str("k").u16(0).bytes(), ErrTruncated, 24+17+9)
	add("string value past the end", oneKV().str("k").typ(TypeString).u64(100).raw('a', 'b').bytes(), ErrTruncated, kvKey+4)
	add("string value 2^63", oneKV().str("k").typ(TypeString).u64(1<<63).bytes(), ErrCorrupt, kvKey+4)
	add("bool 2 reads true", oneKV().str("b").typ(TypeBool).u8(2).bytes(), nil, -1, func(t *testing.T, f *File) {
		v, ok := f.Bool("b")
		assert.True(t, ok)
		assert.True(t, v)
	})

	// Arrays.
	arr := func(elem ValueType, n uint64) *builder { return oneKV().str("k").typ(TypeArray).typ(elem).u64(n) }
	const countAt = kvKey + 8
	add("array length 2^30+1", arr(TypeUint8, MaxArrayElements+1).bytes(), ErrCorrupt, countAt)
	add("array length 2^62", arr(TypeUint8, 1<<62).bytes(), ErrCorrupt, countAt)
	add("array length 2^64-1", arr(TypeString, math.MaxUint64).bytes(), ErrCorrupt, countAt)
	add("array length 2^30 past the end", arr(TypeUint8, MaxArrayElements).zeros(64).bytes(), ErrTruncated, countAt)
	add("u32 array past the end", arr(TypeUint32, 100).zeros(16).bytes(), ErrTruncated, countAt)
	add("string array past the end", arr(TypeString, 10).zeros(40).bytes(), ErrTruncated, countAt)
	add("string element 2^63", arr(TypeString, 1).u64(1<<63).bytes(), ErrCorrupt, countAt+8)
	add("string element past the end", arr(TypeString, 2).str("a").u64(5).raw('x').bytes(), ErrTruncated, countAt+8+9)
	add("empty array", arr(TypeFloat32, 0).bytes(), nil, -1, func(t *testing.T, f *File) {
		kv, ok := f.Lookup("k")
		require.True(t, ok)
		assert.True(t, kv.Array)
		assert.Equal(t, TypeFloat32, kv.Type)
		assert.Equal(t, []float32{}, kv.Value)
		assert.Equal(t, "arr[f32,0]", kv.TypeName())
	})

	// general.alignment.
	alignKV := func() *builder { return oneKV().str(AlignmentKey) }
	add("alignment u64", alignKV().typ(TypeUint64).u64(32).bytes(), ErrCorrupt, 24)
	add("alignment i32", alignKV().typ(TypeInt32).i32(32).bytes(), ErrCorrupt, 24)
	add("alignment array of u32", alignKV().typ(TypeArray).typ(TypeUint32).u64(1).u32(32).bytes(), ErrCorrupt, 24)
	add("alignment string", alignKV().typ(TypeString).str("32").bytes(), ErrCorrupt, 24)
	add("alignment 0", alignKV().typ(TypeUint32).u32(0).bytes(), ErrCorrupt, 24)
	add("alignment 48", alignKV().typ(TypeUint32).u32(48).bytes(), ErrCorrupt, 24)
	add("alignment 2^32-1", alignKV().typ(TypeUint32).u32(math.MaxUint32).bytes(), ErrCorrupt, 24)
	add("alignment key as a C string", oneKV().kvStr(AlignmentKey+"\x00junk", "x").bytes(), ErrCorrupt, 24)
	w := header(3, 1, 1).kvU32(AlignmentKey, 64).tensor("t", GGMLTypeF32, 0, 4)
	add("alignment 64", w.pad(64).zeros(16).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, int64(64), f.Alignment)
		assert.Equal(t, int64(128), f.DataOffset)
		assert.Equal(t, int64(64), f.DataSize)
	})
	w = header(3, 2, 1).kvU32(AlignmentKey, 1).tensor("a", GGMLTypeI8, 0, 3).tensor("b", GGMLTypeI8, 3, 1)
	end := w.pos()
	add("alignment 1", w.zeros(4).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, int64(1), f.Alignment)
		assert.Equal(t, end, f.DataOffset)
		assert.Equal(t, int64(4), f.DataSize)
	})

	// Tensor names.
	const nameAt = 24
	data := make([]byte, 32)
	add("name 64 bytes", oneTensor().tensor(strings.Repeat("n", 64), GGMLTypeF32, 0, 8).pad(32).raw(data...).bytes(), ErrCorrupt, nameAt)
	add("name 2^40 bytes", oneTensor().u64(1<<40).zeros(40).bytes(), ErrCorrupt, nameAt)
	add("name 63 bytes", oneTensor().tensor(strings.Repeat("n", 63), GGMLTypeF32, 0, 8).pad(32).raw(data...).bytes(), nil, -1)
	add("empty name", oneTensor().tensor("", GGMLTypeF32, 0, 8).pad(32).raw(data...).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Empty(t, f.Tensors[0].Name)
	})
	w = header(3, 2, 0).tensor("a", GGMLTypeF32, 0, 8)
	dupAt := w.pos()
	add("duplicate name", w.tensor("a", GGMLTypeF32, 32, 8).pad(32).zeros(64).bytes(), ErrCorrupt, dupAt)
	w = header(3, 2, 0).tensor("a\x00x", GGMLTypeF32, 0, 8)
	dupAt = w.pos()
	add("duplicate C-string name", w.tensor("a\x00y", GGMLTypeF32, 32, 8).pad(32).zeros(64).bytes(), ErrCorrupt, dupAt)
	add("name cut at NUL", oneTensor().tensor("w\x00junk", GGMLTypeF32, 0, 8).pad(32).raw(data...).bytes(), nil, -1,
		func(t *testing.T, f *File) { assert.Equal(t, "w", f.Tensors[0].Name) })

	// Tensor shapes.
	const dimsAt = nameAt + 8 + 1 // n_dims of a tensor named "t"
	tensorRaw := func(nDims uint32, dims ...int64) *builder {
		w := oneTensor().str("t").u32(nDims)
		for _, d := range dims {
			w.i64(d)
		}
		return w
	}
	add("5 dims", tensorRaw(5, 1, 1, 1, 1, 1).i32(0).u64(0).bytes(), ErrCorrupt, dimsAt)
	add("2^32-1 dims", tensorRaw(math.MaxUint32).zeros(32).bytes(), ErrCorrupt, dimsAt)
	add("0 dims is a scalar", oneTensor().tensor("t", GGMLTypeF32, 0).pad(32).zeros(4).bytes(), nil, -1, func(t *testing.T, f *File) {
		ti := f.Tensors[0]
		assert.Empty(t, ti.Dims)
		assert.Equal(t, int64(1), ti.Elements())
		assert.Equal(t, int64(4), ti.Size)
		assert.Equal(t, [MaxDims]int64{1, 1, 1, 1}, ti.Shape())
	})
	add("negative dim", oneTensor().tensor("t", GGMLTypeF32, 0, 4, -1).bytes(), ErrCorrupt, dimsAt+4+8)
	add("dim -2^63", oneTensor().tensor("t", GGMLTypeF32, 0, math.MinInt64).bytes(), ErrCorrupt, dimsAt+4)
	add("zero dim", oneTensor().tensor("t", GGMLTypeF32, 0, 0, 8).pad(32).bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Zero(t, f.Tensors[0].Size)
		assert.Zero(t, f.Tensors[0].Elements())
	})
	add("zero dim with huge others", oneTensor().tensor("t", GGMLTypeF32, 0, 1<<62, 0, 1<<62, 1<<62).pad(32).bytes(), nil, -1)
	add("2^32 x 2^32 (wraps to 0 in ggml_nelements)", oneTensor().tensor("t", GGMLTypeF32, 0, 1<<32, 1<<32).pad(32).bytes(), ErrCorrupt, dimsAt)
	add("2^62 x 2", oneTensor().tensor("t", GGMLTypeI8, 0, 1<<62, 2).bytes(), ErrCorrupt, dimsAt)
	add("INT64_MAX elements", oneTensor().tensor("t", GGMLTypeI8, 0, math.MaxInt64).bytes(), ErrCorrupt, dimsAt)
	add("2^21 x 2^21 x 2^21", oneTensor().tensor("t", GGMLTypeI8, 0, 1<<21, 1<<21, 1<<21).bytes(), ErrCorrupt, dimsAt)
	add("2^16 in 4 dims", oneTensor().tensor("t", GGMLTypeI8, 0, 1<<16, 1<<16, 1<<16, 1<<16).bytes(), ErrCorrupt, dimsAt)

	// Tensor types.
	typeAt := int64(dimsAt + 4 + 8)
	for _, typ := range []int32{43, 1000, -1, 4, 5, 31, 32, 33, 36, 37, 38} {
		add("type "+itoa(int64(typ)), oneTensor().tensor("t", GGMLType(typ), 0, 256).bytes(), ErrCorrupt, typeAt)
	}
	add("q4_0 row of 33", oneTensor().tensor("t", GGMLTypeQ4_0, 0, 33).bytes(), ErrCorrupt, dimsAt)
	add("q4_K row of 128", oneTensor().tensor("t", GGMLTypeQ4_K, 0, 128, 2).bytes(), ErrCorrupt, dimsAt)
	add("f64 of 2^62 elements (over 2^64 bytes)", oneTensor().tensor("t", GGMLTypeF64, 0, 1<<62).bytes(), ErrCorrupt, dimsAt)
	w = oneTensor().tensor("t", GGMLTypeQ8_K, 0, 1<<62)
	at := w.pos() - 8
	add("q8_K row of 2^62 (ggml_nbytes wraps to 0)", w.pad(32).bytes(), errOutOfFile, at)
	for _, typ := range []GGMLType{GGMLTypeQ4_K, GGMLTypeIQ2_XXS, GGMLTypeMXFP4, GGMLTypeNVFP4, GGMLTypeQ1_0, GGMLTypeTQ2_0, GGMLTypeBF16} {
		n := typ.BlockSize() * 2
		add("type "+typ.String(), oneTensor().tensor("t", typ, 0, n, 3).pad(32).zeros(int(6*typ.TypeSize())).bytes(), nil, -1,
			func(t *testing.T, f *File) { assert.Equal(t, 6*typ.TypeSize(), f.Tensors[0].Size) })
	}

	// Data section and offsets.
	w = oneTensor().tensor("t", GGMLTypeF32, 0, 1)
	add("data section starts past the end", w.bytes(), ErrTruncated, w.pos())
	const firstAt = 24 + 8 + 1 + 4 + 8 + 4 // offset field of a 1-dim tensor named "t" or "a"
	add("first offset not 0", oneTensor().tensor("t", GGMLTypeF32, 32, 8).pad(32).zeros(64).bytes(), ErrCorrupt, firstAt)
	add("first offset 2^64-32", oneTensor().tensor("t", GGMLTypeF32, math.MaxUint64-31, 8).pad(32).zeros(64).bytes(), ErrCorrupt, firstAt)
	two := func(off uint64) (*builder, int64) {
		w := header(3, 2, 0).tensor("a", GGMLTypeF32, 0, 8).tensor("b", GGMLTypeF32, off, 8)
		return w, w.pos() - 8
	}
	for _, off := range []uint64{0, 16, 33, 64, 1 << 40} {
		w, at := two(off)
		add("second offset "+itoa(int64(off)), w.pad(32).zeros(128).bytes(), ErrCorrupt, at)
	}
	w, at = two(32)
	infosEnd := w.pos()
	full := w.pad(32).zeros(64).bytes()
	add("second offset 32", full, nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, int64(96), f.DataOffset)
		assert.Equal(t, int64(32), f.Tensors[1].Offset)
		assert.Equal(t, f.DataOffset+32, f.Tensors[1].FileOffset)
	})
	add("second tensor past the end", full[:96+32+16], errOutOfFile, at)
	add("data section padding cut", full[:infosEnd+3], ErrTruncated, infosEnd)
	add("no data after the padding", full[:96], errOutOfFile, firstAt)

	// The token list (llama.cpp aborts on duplicate tokens).
	toks := func(model string, tokens ...string) (*builder, []int64) {
		w := header(3, 0, 2).kvStr("tokenizer.ggml.model", model).str(TokensKey).typ(TypeArray).typ(TypeString).u64(uint64(len(tokens)))
		var at []int64
		for _, tok := range tokens {
			at = append(at, w.pos())
			w.str(tok)
		}
		return w, at
	}
	w, ats := toks("llama", "<unk>", "<0x00>", "<0x00>")
	add("duplicate token", w.bytes(), ErrCorrupt, ats[2])
	w, ats = toks("gpt2", "a", "b\x00x", "c", "b\x00y")
	add("duplicate token as C strings", w.bytes(), ErrCorrupt, ats[3])
	w, ats = toks("gpt2", "", "[EMPTY_0]")
	add("empty token named like its replacement", w.bytes(), ErrCorrupt, ats[1])
	w, _ = toks("llama", "", "", "[EMPTY_3]")
	add("empty tokens", w.bytes(), nil, -1)
	w, _ = toks("none", "x", "x")
	add("duplicate tokens, model none", w.bytes(), nil, -1)
	w, _ = toks("no_vocab", "x", "x")
	add("duplicate tokens, no_vocab", w.bytes(), nil, -1)
	add("tokens not strings", header(3, 0, 1).str(TokensKey).typ(TypeArray).typ(TypeInt32).u64(2).i32(1).i32(1).bytes(), nil, -1)

	// Layer counts llama.cpp asserts on when it loads a model's weights. kvs writes the KVs
	// after general.architecture and returns how many and where the one at fault starts.
	model := func(arch string, kvs func(w *builder) (n int, bad int64)) ([]byte, int64) {
		w := header(3, 1, 0).kvStr("general.architecture", arch)
		n, bad := kvs(w)
		binary.LittleEndian.PutUint64(w.b[16:], uint64(n+1))
		return w.tensor("t", GGMLTypeF32, 0, 8).pad(32).zeros(32).bytes(), bad
	}
	blocks := func(key string, v uint32) func(w *builder) (int, int64) {
		return func(w *builder) (int, int64) { at := w.pos(); w.kvU32(key, v); return 1, at }
	}
	nextn := func(layers, next uint32) func(w *builder) (int, int64) {
		return func(w *builder) (int, int64) {
			w.kvU32("glm4moe.block_count", layers)
			at := w.pos()
			w.kvU32("glm4moe.nextn_predict_layers", next)
			return 2, at
		}
	}
	for _, c := range []struct {
		name string
		arch string
		kvs  func(w *builder) (int, int64)
		want error
	}{
		{"block count 0", "llama", blocks("llama.block_count", 0), ErrCorrupt},
		{"block count 513", "llama", blocks("llama.block_count", 513), ErrCorrupt},
		{"block count 2^32-1", "qwen2", blocks("qwen2.block_count", math.MaxUint32), ErrCorrupt},
		{"block count 512", "llama", blocks("llama.block_count", 512), nil},
		{"block count 0, clip", "clip", blocks("clip.block_count", 0), nil},
		{"block count 0, another arch's key", "llama", blocks("qwen2.block_count", 0), nil},
		{"block count 0 as u64", "llama", func(w *builder) (int, int64) {
			w.str("llama.block_count").typ(TypeUint64).u64(0)
			return 1, -1
		}, nil},
		{"no block count", "llama", func(w *builder) (int, int64) { return 0, -1 }, nil},
		{"nextn 3 of 2 layers", "glm4moe", nextn(2, 3), ErrCorrupt},
		{"nextn 2 of 2 layers", "glm4moe", nextn(2, 2), nil},
	} {
		data, bad := model(c.arch, c.kvs)
		add(c.name, data, c.want, bad)
	}
	add("block count 0 in a vocab-only file", header(3, 0, 2).kvStr("general.architecture", "llama").kvU32("llama.block_count", 0).bytes(), nil, -1)

	valid := validFile()
	add("valid", valid, nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, "llama", f.Architecture())
		assert.Equal(t, 2, f.TensorCount())
		assert.Equal(t, int64(64), f.DataSize)
	})
	add("valid without the last tensor's padding", valid[:len(valid)-14], nil, -1)
	add("valid cut in the last tensor", valid[:len(valid)-15], errOutOfFile, -1)
	w = header(3, 0, 1).kvStr("a", "bc")
	add("no tensors: data offset not padded", w.bytes(), nil, -1, func(t *testing.T, f *File) {
		assert.Equal(t, w.pos(), f.DataOffset)
		assert.Equal(t, int64(47), f.DataOffset)
	})
	return cs
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// TestSynthetic runs every hand-made case: a malformed file fails with the expected sentinel
// at the expected offset, a well-formed one parses with its invariants.
func TestSynthetic(t *testing.T) {
	cases := synthCases()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := readBytes(c.data, WithName("synthetic.gguf"))
			if c.want == nil {
				require.NoError(t, err)
				checkInvariants(t, f)
				assert.Equal(t, "synthetic.gguf", f.Path)
				if c.check != nil {
					c.check(t, f)
				}
				return
			}
			require.Error(t, err)
			assert.Nil(t, f)
			assert.ErrorIs(t, err, c.want)
			var fe *FormatError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, "synthetic.gguf", fe.Path)
			assert.NotEmpty(t, fe.What)
			assert.LessOrEqual(t, fe.Offset, int64(len(c.data)))
			if c.off >= 0 {
				assert.Equal(t, c.off, fe.Offset, "%v", err)
			}
			assert.Contains(t, err.Error(), "synthetic.gguf")
		})
	}
	t.Logf("%d synthetic cases", len(cases))
}

func TestOutOfFileMatchesBothSentinels(t *testing.T) {
	valid := validFile()
	_, err := readBytes(valid[:len(valid)-20])
	assert.ErrorIs(t, err, ErrTruncated)
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrNotGGUF)
	assert.NotErrorIs(t, err, ErrVersion)
	assert.Contains(t, err.Error(), `"output.weight"`)
}

func TestLongStrings(t *testing.T) {
	long := strings.Repeat("{{ x }}", 700000) // 4.9 MB, read past the buffer
	data := header(3, 0, 3).kvStr("a", "short").kvStr("tokenizer.chat_template", long).kvStrs("b", long[:3<<20], "z").bytes()
	for _, r := range []struct {
		name string
		read func() (*File, error)
	}{
		{"bytes", func() (*File, error) { return readBytes(data) }},
		{"file", func() (*File, error) {
			p := filepath.Join(t.TempDir(), "long.gguf")
			require.NoError(t, os.WriteFile(p, data, 0o644))
			return Open(p)
		}},
	} {
		f, err := r.read()
		require.NoError(t, err, r.name)
		tmpl, ok := f.ChatTemplate()
		assert.True(t, ok)
		assert.Equal(t, long, tmpl)
		b, ok := f.Strings("b")
		assert.True(t, ok)
		assert.Equal(t, []string{long[:3<<20], "z"}, b)
		a, _ := f.String("a")
		assert.Equal(t, "short", a)
	}
	_, err := readBytes(data[:len(data)-1])
	assert.ErrorIs(t, err, ErrTruncated)
	_, err = readBytes(data[:2<<20])
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestOptions(t *testing.T) {
	data := header(3, 0, 2).kvStr("a", strings.Repeat("x", 100)).kvStrs("b", "1", "2", "3").bytes()
	_, err := readBytes(data)
	require.NoError(t, err)
	_, err = readBytes(data, WithMaxStringLength(99))
	assert.ErrorIs(t, err, ErrCorrupt)
	_, err = readBytes(data, WithMaxStringLength(100))
	assert.NoError(t, err)
	_, err = readBytes(data, WithMaxArrayElements(2))
	assert.ErrorIs(t, err, ErrCorrupt)
	// Raising a limit above gguf.cpp's is clamped: a file gguf.cpp refuses stays refused.
	big := header(3, 0, 1).str("k").typ(TypeArray).typ(TypeUint8).u64(MaxArrayElements + 1).bytes()
	_, err = readBytes(big, WithMaxArrayElements(math.MaxUint64), WithMaxStringLength(math.MaxUint64))
	assert.ErrorIs(t, err, ErrCorrupt)
}

func TestAccessors(t *testing.T) {
	w := header(3, 0, 17).
		str("u8").typ(TypeUint8).u8(200).
		str("i8").typ(TypeInt8).u8(0xff).
		str("u16").typ(TypeUint16).u16(60000).
		str("i16").typ(TypeInt16).u16(0x8000).
		str("u32").typ(TypeUint32).u32(4000000000).
		str("i32").typ(TypeInt32).i32(-5).
		str("f32").typ(TypeFloat32).f32(1.5).
		str("bool").typ(TypeBool).u8(0).
		str("u64").typ(TypeUint64).u64(math.MaxUint64).
		str("i64").typ(TypeInt64).i64(-1<<40).
		str("f64").typ(TypeFloat64).f64(-2.25).
		kvStr("general.architecture", "qwen2").
		kvStr("tokenizer.chat_template", "{{ default }}").
		kvStr("tokenizer.chat_template.tool_use", "{{ tools }}").
		kvStrs("tokenizer.chat_template.not_a_string", "x").
		kvStrs("tokenizer.ggml.tokens", "a", "", "c").
		str("i32s").typ(TypeArray).typ(TypeInt32).u64(2).i32(-1).i32(7)
	f, err := readBytes(w.bytes())
	require.NoError(t, err)
	checkInvariants(t, f)

	assert.Equal(t, []string{"u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "u64", "i64", "f64",
		"general.architecture", "tokenizer.chat_template", "tokenizer.chat_template.tool_use",
		"tokenizer.chat_template.not_a_string", "tokenizer.ggml.tokens", "i32s"}, f.Keys())

	ints := []struct {
		key  string
		want int64
		ok   bool
	}{
		{"u8", 200, true}, {"i8", -1, true}, {"u16", 60000, true}, {"i16", -32768, true},
		{"u32", 4000000000, true}, {"i32", -5, true}, {"i64", -1 << 40, true},
		{"u64", 0, false}, {"f32", 0, false}, {"bool", 0, false}, {"i32s", 0, false}, {"missing", 0, false},
	}
	for _, c := range ints {
		got, ok := f.Int(c.key)
		assert.Equal(t, c.ok, ok, c.key)
		assert.Equal(t, c.want, got, c.key)
	}
	u32, ok := f.Uint32("u32")
	assert.True(t, ok)
	assert.Equal(t, uint32(4000000000), u32)
	_, ok = f.Uint32("i32")
	assert.False(t, ok, "Uint32 does not convert")
	u64, ok := f.Uint64("u64")
	assert.True(t, ok)
	assert.Equal(t, uint64(math.MaxUint64), u64)
	_, ok = f.Uint64("u32")
	assert.False(t, ok)

	fl, ok := f.Float("f32")
	assert.True(t, ok)
	assert.Equal(t, 1.5, fl)
	fl, ok = f.Float("f64")
	assert.True(t, ok)
	assert.Equal(t, -2.25, fl)
	_, ok = f.Float("u8")
	assert.False(t, ok)

	b, ok := f.Bool("bool")
	assert.True(t, ok)
	assert.False(t, b)
	_, ok = f.Bool("u8")
	assert.False(t, ok)

	assert.Equal(t, "qwen2", f.Architecture())
	tmpl, ok := f.ChatTemplate()
	assert.True(t, ok)
	assert.Equal(t, "{{ default }}", tmpl)
	assert.Equal(t, map[string]string{"tool_use": "{{ tools }}"}, f.ChatTemplates())

	toks, ok := f.Strings("tokenizer.ggml.tokens")
	assert.True(t, ok)
	assert.Equal(t, []string{"a", "", "c"}, toks)
	_, ok = f.Strings("general.architecture")
	assert.False(t, ok)
	_, ok = f.String("tokenizer.ggml.tokens")
	assert.False(t, ok)

	kv, ok := f.Lookup("i32s")
	require.True(t, ok)
	assert.Equal(t, []int32{-1, 7}, kv.Value)
	assert.Equal(t, 2, kv.Len())
	assert.Equal(t, "arr[i32,2]", kv.TypeName())
	assert.Equal(t, TypeInt32, kv.Type)
	kv, ok = f.Lookup("u8")
	require.True(t, ok)
	assert.Equal(t, uint8(200), kv.Value)
	assert.Equal(t, 1, kv.Len())
	assert.Equal(t, int64(24), kv.Offset)
	assert.Equal(t, "u8", kv.TypeName())
	_, ok = f.Lookup("u8\x00suffix")
	assert.True(t, ok, "a query is compared as a C string too")
	_, ok = f.Tensor("none")
	assert.False(t, ok)

	// No chat template at all.
	f, err = readBytes(header(3, 0, 0).bytes())
	require.NoError(t, err)
	_, ok = f.ChatTemplate()
	assert.False(t, ok)
	assert.Empty(t, f.ChatTemplates())
}

func TestTypeTables(t *testing.T) {
	// Spot checks against ggml.c's type_traits and ggml-common.h's block structs.
	cases := []struct {
		typ        GGMLType
		name       string
		blck, size int64
	}{
		{GGMLTypeF32, "f32", 1, 4}, {GGMLTypeF16, "f16", 1, 2}, {GGMLTypeBF16, "bf16", 1, 2},
		{GGMLTypeQ4_0, "q4_0", 32, 18}, {GGMLTypeQ8_0, "q8_0", 32, 34}, {GGMLTypeQ4_K, "q4_K", 256, 144},
		{GGMLTypeQ6_K, "q6_K", 256, 210}, {GGMLTypeQ8_K, "q8_K", 256, 292}, {GGMLTypeIQ4_NL, "iq4_nl", 32, 18},
		{GGMLTypeMXFP4, "mxfp4", 32, 17}, {GGMLTypeNVFP4, "nvfp4", 64, 36}, {GGMLTypeQ1_0, "q1_0", 128, 18},
		{GGMLTypeQ2_0, "q2_0", 64, 18}, {GGMLTypeI64, "i64", 1, 8}, {GGMLTypeTQ1_0, "tq1_0", 256, 54},
	}
	for _, c := range cases {
		assert.Equal(t, c.name, c.typ.String())
		assert.Equal(t, c.blck, c.typ.BlockSize(), c.name)
		assert.Equal(t, c.size, c.typ.TypeSize(), c.name)
		assert.True(t, c.typ.Supported(), c.name)
	}
	supported := 0
	for typ := GGMLType(-2); typ < GGMLTypeCount+2; typ++ {
		if typ.Supported() {
			supported++
			assert.Positive(t, typ.TypeSize(), typ.String())
		} else {
			assert.Zero(t, typ.BlockSize(), typ.String())
		}
	}
	assert.Equal(t, 43-8, supported, "43 enum values less the 8 removed ones (4, 5, 31-33, 36-38)")
	assert.Equal(t, "ggml_type(43)", GGMLTypeCount.String())
	assert.Equal(t, "q4_2 (removed)", GGMLType(4).String())

	for typ := ValueType(0); typ < typeCount; typ++ {
		assert.NotContains(t, typ.String(), "gguf_type")
	}
	assert.Equal(t, "str", TypeString.String())
	assert.Equal(t, "gguf_type(13)", ValueType(13).String())
	assert.Equal(t, 8, TypeFloat64.Size())
	assert.Zero(t, TypeString.Size())
	assert.Zero(t, TypeArray.Size())
}

func TestStoriesModel(t *testing.T) {
	path := testenv.SharedData(t, "models/stories260K.gguf")
	f, err := Open(path)
	require.NoError(t, err)
	checkInvariants(t, f)

	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, st.Size(), f.Size)
	assert.Equal(t, path, f.Path)
	assert.Equal(t, uint32(3), f.Version)
	assert.Equal(t, "llama", f.Architecture())
	assert.Equal(t, int64(DefaultAlignment), f.Alignment)
	assert.Equal(t, 19, f.KVCount())
	assert.Equal(t, 48, f.TensorCount())
	assert.Equal(t, int64(14176), f.DataOffset)
	assert.Equal(t, f.Size, f.DataOffset+f.DataSize, "the data section runs to the end of the file")

	model, ok := f.String("tokenizer.ggml.model")
	assert.True(t, ok)
	assert.Equal(t, "llama", model)
	ctx, ok := f.Uint32("llama.context_length")
	assert.True(t, ok)
	assert.Equal(t, uint32(2048), ctx)
	blocks, ok := f.Int("llama.block_count")
	assert.True(t, ok)
	assert.Equal(t, int64(5), blocks)
	eps, ok := f.Float("llama.attention.layer_norm_rms_epsilon")
	assert.True(t, ok)
	assert.InDelta(t, 1e-5, eps, 1e-9)
	toks, ok := f.Strings("tokenizer.ggml.tokens")
	assert.True(t, ok)
	assert.Len(t, toks, 512)
	assert.Equal(t, []string{"<unk>", "<s>", "</s>"}, toks[:3])
	_, ok = f.ChatTemplate()
	assert.False(t, ok)

	emb, ok := f.Tensor("token_embd.weight")
	require.True(t, ok)
	assert.Equal(t, GGMLTypeF32, emb.Type)
	assert.Equal(t, []int64{64, 512}, emb.Dims)
	assert.Equal(t, int64(0), emb.Offset)
	assert.Equal(t, int64(64*512*4), emb.Size)
	assert.Equal(t, f.DataOffset, emb.FileOffset)
	last := f.Tensors[len(f.Tensors)-1]
	assert.Equal(t, "blk.4.ffn_norm.weight", last.Name)
	assert.Equal(t, f.Size, last.FileOffset+last.Size)
	for i := 0; i < 5; i++ {
		_, ok := f.Tensor("blk." + itoa(int64(i)) + ".attn_q.weight")
		assert.True(t, ok)
	}
}

// vocabModels are the tokenizer.ggml.model, general.architecture and token count of the
// vocab-only files llama.cpp ships, as llama.cpp's own reader reports them.
var vocabModels = map[string]struct {
	model, arch string
	tokens      int
}{
	"aquila": {"gpt2", "llama", 100008}, "baichuan": {"llama", "baichuan", 64000},
	"bert-bge": {"bert", "bert", 30522}, "command-r": {"gpt2", "command-r", 256000},
	"deepseek-coder": {"gpt2", "llama", 32256}, "deepseek-llm": {"gpt2", "llama", 102400},
	"falcon": {"gpt2", "falcon", 65024}, "gemma-4": {"gemma4", "gemma4", 262144},
	"gpt-2": {"gpt2", "gpt2", 50257}, "gpt-neox": {"gpt2", "gptneox", 50432},
	"llama-bpe": {"gpt2", "llama", 128256}, "llama-spm": {"llama", "llama", 32000},
	"mpt": {"gpt2", "mpt", 50432}, "nomic-bert-moe": {"t5", "nomic-bert-moe", 250048},
	"phi-3": {"llama", "phi3", 32064}, "qwen2": {"gpt2", "qwen2", 151936},
	"qwen35": {"gpt2", "qwen2", 151936}, "refact": {"gpt2", "refact", 49216},
	"starcoder": {"gpt2", "starcoder2", 49152},
}

func TestVocabFiles(t *testing.T) {
	dir := filepath.Join(testenv.LlamaCppDir(t), "models")
	paths, err := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf"))
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	known := 0
	for _, path := range paths {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "ggml-vocab-"), ".gguf")
		t.Run(name, func(t *testing.T) {
			f, err := Open(path)
			require.NoError(t, err)
			checkInvariants(t, f)
			assert.Zero(t, f.TensorCount(), "vocab-only files have no tensors")
			assert.Equal(t, f.Size, f.DataOffset, "with no tensors the data section is empty, unpadded")
			model, ok := f.String("tokenizer.ggml.model")
			assert.True(t, ok)
			toks, ok := f.Strings("tokenizer.ggml.tokens")
			assert.True(t, ok)
			want, isKnown := vocabModels[name]
			if !isKnown {
				assert.NotEmpty(t, model)
				return
			}
			known++
			assert.Equal(t, want.model, model)
			assert.Equal(t, want.arch, f.Architecture())
			assert.Len(t, toks, want.tokens)
		})
	}
	assert.Equal(t, len(vocabModels), known, "every expected vocab file is present")

	// command-r has named chat templates besides the default one.
	f, err := Open(filepath.Join(dir, "ggml-vocab-command-r.gguf"))
	require.NoError(t, err)
	_, ok := f.ChatTemplate()
	assert.True(t, ok)
	named := f.ChatTemplates()
	assert.Len(t, named, 2)
	assert.Contains(t, named, "tool_use")
	assert.Contains(t, named, "rag")
	names, ok := f.Strings("tokenizer.chat_templates")
	assert.True(t, ok)
	assert.ElementsMatch(t, []string{"tool_use", "rag"}, names)
}

// TestLargeVocabIsFast parses a 262144-token vocabulary (the size of gemma's), from a
// synthetic file and from the real gemma-4 vocab when present, well under a second.
func TestLargeVocabIsFast(t *testing.T) {
	const n = 262144
	w := header(3, 0, 3).str("tokenizer.ggml.tokens").typ(TypeArray).typ(TypeString).u64(n)
	for i := 0; i < n; i++ {
		w.str("tok" + itoa(int64(i)))
	}
	w.str("tokenizer.ggml.scores").typ(TypeArray).typ(TypeFloat32).u64(n).zeros(4 * n)
	w.str("tokenizer.ggml.token_type").typ(TypeArray).typ(TypeInt32).u64(n).zeros(4 * n)
	path := filepath.Join(t.TempDir(), "vocab.gguf")
	require.NoError(t, os.WriteFile(path, w.bytes(), 0o644))

	paths := []string{path}
	real := filepath.Join(testenv.RepoRoot(t), "third_party", "llama.cpp", "models", "ggml-vocab-gemma-4.gguf")
	if dir := os.Getenv("LLAMA_CPP_DIR"); dir != "" {
		real = filepath.Join(dir, "models", "ggml-vocab-gemma-4.gguf")
	}
	if _, err := os.Stat(real); err == nil {
		paths = append(paths, real)
	}
	for _, p := range paths {
		start := time.Now()
		f, err := Open(p)
		elapsed := time.Since(start)
		require.NoError(t, err)
		toks, ok := f.Strings("tokenizer.ggml.tokens")
		require.True(t, ok)
		assert.Len(t, toks, n)
		t.Logf("%s: %d tokens, %d bytes of metadata in %v", filepath.Base(p), len(toks), f.DataOffset, elapsed)
		assert.Less(t, elapsed, time.Second)
	}
}

// TestAbsurdValuesAllocateNothing checks that huge counts and lengths fail before any
// allocation they would justify: a few hundred bytes of input cost a few KiB at most.
func TestAbsurdValuesAllocateNothing(t *testing.T) {
	inputs := map[string][]byte{
		"kv count 2^40":            header(3, 0, 1<<40).zeros(200).bytes(),
		"tensor count 2^50":        header(3, 1<<50, 0).zeros(200).bytes(),
		"kv count 2^60":            header(3, 0, 1<<60).zeros(200).bytes(),
		"key length 2^63":          header(3, 0, 1).u64(1 << 63).zeros(200).bytes(),
		"key length 2^30":          header(3, 0, 1).u64(1 << 30).zeros(200).bytes(),
		"array length 2^30":        header(3, 0, 1).str("k").typ(TypeArray).typ(TypeUint64).u64(1 << 30).zeros(200).bytes(),
		"string array length 2^30": header(3, 0, 1).str("k").typ(TypeArray).typ(TypeString).u64(1 << 30).zeros(200).bytes(),
		"string value 2^30":        header(3, 0, 1).str("k").typ(TypeString).u64(1 << 30).zeros(200).bytes(),
		"tensor name 2^30":         header(3, 1, 0).u64(1 << 30).zeros(200).bytes(),
	}
	for name, data := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		_, err := readBytes(data)
		runtime.ReadMemStats(&after)
		require.Error(t, err, name)
		assert.True(t, isSentinel(err), "%s: %v", name, err)
		allocated := after.TotalAlloc - before.TotalAlloc
		assert.Less(t, allocated, uint64(16<<10), "%s allocated %d bytes", name, allocated)
	}
}

func TestOpenErrors(t *testing.T) {
	t.Logf("%d file-system cases", runOpenCases(t))
}

// runOpenCases opens files that are not GGUF files for file-system reasons (missing, a
// directory, empty, unreadable, a device) or are cut short, and returns how many cases ran.
func runOpenCases(t *testing.T) int {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, data, mode))
		return p
	}
	cases := []struct {
		name string
		path string
		want error
	}{
		{"missing", filepath.Join(dir, "missing.gguf"), fs.ErrNotExist},
		{"directory", dir, ErrNotGGUF},
		{"zero-length", write("empty.gguf", nil, 0o644), ErrNotGGUF},
		{"text", write("text.gguf", []byte("this is not a model file at all"), 0o644), ErrNotGGUF},
		{"truncated header", write("short.gguf", validFile()[:20], 0o644), ErrTruncated},
		{"truncated metadata", write("meta.gguf", validFile()[:90], 0o644), ErrTruncated},
		{"truncated data", write("data.gguf", validFile()[:len(validFile())-20], 0o644), ErrTruncated},
	}
	if _, err := os.Stat("/dev/null"); err == nil {
		cases = append(cases, struct {
			name string
			path string
			want error
		}{"character device", "/dev/null", ErrNotGGUF})
	}
	n := 0
	for _, c := range cases {
		n++
		t.Run(c.name, func(t *testing.T) {
			f, err := Open(c.path)
			assert.Nil(t, f)
			assert.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), c.path)
		})
	}

	n++
	t.Run("unreadable", func(t *testing.T) {
		p := write("unreadable.gguf", validFile(), 0o644)
		require.NoError(t, os.Chmod(p, 0))
		if fh, err := os.Open(p); err == nil {
			fh.Close()
			t.Skip("chmod 000 does not stop this process from reading (running as root?): the unreadable case cannot be made here")
		}
		f, err := Open(p)
		assert.Nil(t, f)
		assert.ErrorIs(t, err, fs.ErrPermission)
	})

	n++
	t.Run("valid file", func(t *testing.T) {
		f, err := Open(write("valid.gguf", validFile(), 0o644))
		require.NoError(t, err)
		checkInvariants(t, f)
	})
	return n
}

// shortReader is an io.ReaderAt holding fewer bytes than the size Read is told.
type shortReader struct{ b []byte }

func (r shortReader) ReadAt(p []byte, off int64) (int, error) {
	return bytes.NewReader(r.b).ReadAt(p, off)
}

type failingReader struct{}

var errDisk = errors.New("disk on fire")

func (failingReader) ReadAt([]byte, int64) (int, error) { return 0, errDisk }

func TestReaderErrors(t *testing.T) {
	valid := validFile()
	_, err := Read(shortReader{valid[:30]}, int64(len(valid)))
	assert.ErrorIs(t, err, ErrTruncated)

	_, err = Read(failingReader{}, 100)
	assert.ErrorIs(t, err, errDisk)
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.Zero(t, fe.Offset)

	_, err = Read(bytes.NewReader(valid), -1)
	assert.ErrorIs(t, err, ErrNotGGUF)

	// A reader far shorter than its declared size, with a 1 GiB string: the string is read
	// as it arrives, so the lie costs a few MiB, not 1 GiB.
	lie := header(3, 0, 1).str("k").typ(TypeString).u64(MaxStringLength).zeros(3 << 20).bytes()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = Read(shortReader{lie}, 1<<40)
	runtime.ReadMemStats(&after)
	assert.ErrorIs(t, err, ErrTruncated)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(32<<20))

	// A reader holding more than size: only size bytes count.
	_, err = Read(bytes.NewReader(valid), int64(len(valid)-20))
	assert.ErrorIs(t, err, ErrTruncated)
}

func TestFormatErrorText(t *testing.T) {
	e := &FormatError{Path: "m.gguf", Offset: 16, What: "key-value count 5 is outside [0, 1]", Err: ErrCorrupt}
	assert.Equal(t, "gguf: m.gguf: offset 16 (0x10): key-value count 5 is outside [0, 1]: corrupt GGUF file", e.Error())
	e.Path = ""
	assert.Equal(t, "gguf: offset 16 (0x10): key-value count 5 is outside [0, 1]: corrupt GGUF file", e.Error())
	assert.ErrorIs(t, e, ErrCorrupt)

	_, err := readBytes(header(3, 0, 2).kvU32("general.alignment", 8).kvU32("general.alignment", 8).bytes())
	assert.Contains(t, err.Error(), `key-value pair 1 "general.alignment": duplicate key`)
}
