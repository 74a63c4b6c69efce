package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
)

// The corruption corpus: damaged copies of real files (the stories260K model and a vocab-only
// file), made in memory and parsed with Read, plus the file-system cases parsed with Open.
// Every truncation must fail with ErrNotGGUF or ErrTruncated; every targeted mutation with its
// expected sentinel; every single-bit flip must either fail with one of the sentinels or parse
// into a File whose invariants hold (a flip in a string's content, or one that makes another
// valid file such as version 3 -> 2, is legitimately accepted), and nothing may panic.

// errAny, as a corpus expectation, accepts any of the sentinels.
var errAny = errors.New("any sentinel")

// corpusCount is the number of corpus cases run, over all sources.
var corpusCount atomic.Int64

// safeRead parses data, turning a panic into a test failure message with its stack.
func safeRead(data []byte) (f *File, err error, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	f, err = readBytes(data)
	return f, err, ""
}

// checker reports corpus failures, stopping after a few so a regression stays readable.
type checker struct {
	t        *testing.T
	failures int
}

func (c *checker) errorf(format string, args ...any) {
	c.t.Helper()
	c.t.Errorf(format, args...)
	if c.failures++; c.failures >= 20 {
		c.t.Fatal("too many failures")
	}
}

// expect checks one parse result against want (nil: must parse; errAny: any sentinel).
func (c *checker) expect(name string, data []byte, want error) (accepted bool) {
	c.t.Helper()
	corpusCount.Add(1)
	f, err, panicked := safeRead(data)
	switch {
	case panicked != "":
		c.errorf("%s: panic: %s", name, panicked)
	case want == nil && err != nil:
		c.errorf("%s: want a valid file, got %v", name, err)
	case want == nil:
		if ierr := invariants(f); ierr != nil {
			c.errorf("%s: %v", name, ierr)
		}
		return true
	case err == nil:
		c.errorf("%s: want an error (%v), the file parsed", name, want)
		return true
	case want == errAny && !isSentinel(err), want != errAny && !errors.Is(err, want):
		c.errorf("%s: want %v, got %v", name, want, err)
	default:
		var fe *FormatError
		if !errors.As(err, &fe) {
			c.errorf("%s: %v is not a *FormatError", name, err)
		} else if fe.Offset < 0 || fe.Offset > int64(len(data)) {
			c.errorf("%s: error offset %d outside the %d-byte input: %v", name, fe.Offset, len(data), err)
		}
	}
	return false
}

// Field offsets of a parsed KV or tensor info.
func kvTypeAt(kv KV) int         { return int(kv.Offset) + 8 + len(kv.Key) }
func kvCountAt(kv KV) int        { return kvTypeAt(kv) + 8 }                      // arrays only
func tiDimsAt(ti TensorInfo) int { return int(ti.InfoOffset) + 8 + len(ti.Name) } // n_dims
func tiTypeAt(ti TensorInfo) int { return tiDimsAt(ti) + 4 + 8*len(ti.Dims) }

func put32(b []byte, at int, v uint32) { binary.LittleEndian.PutUint32(b[at:], v) }
func put64(b []byte, at int, v uint64) { binary.LittleEndian.PutUint64(b[at:], v) }

func TestCorruptionCorpus(t *testing.T) {
	sources := []struct {
		name string
		path func(t *testing.T) string
	}{
		{"stories260K", func(t *testing.T) string { return testenv.SharedData(t, "models/stories260K.gguf") }},
		{"vocab-llama-spm", func(t *testing.T) string {
			return filepath.Join(testenv.LlamaCppDir(t), "models", "ggml-vocab-llama-spm.gguf")
		}},
	}
	t.Cleanup(func() { t.Logf("corruption corpus: %d cases in all", corpusCount.Load()) })
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(src.path(t))
			require.NoError(t, err)
			orig, err := readBytes(data)
			require.NoError(t, err)
			checkInvariants(t, orig)
			require.NotEmpty(t, orig.KVs)
			t.Run("truncation", func(t *testing.T) { truncations(t, data, orig) })
			t.Run("targeted", func(t *testing.T) { targeted(t, data, orig) })
			t.Run("bitflip", func(t *testing.T) { bitFlips(t, data, orig) })
		})
	}
	t.Run("filesystem", func(t *testing.T) { corpusCount.Add(int64(runOpenCases(t))) })
}

// truncations cuts the file at every byte of the header and the first key-value pairs (at
// least the first 4 KiB), at and around every field boundary of the metadata, then at a
// stride through the rest of the metadata, the tensor infos and the tensor data.
func truncations(t *testing.T, data []byte, f *File) {
	size := len(data)
	points := map[int]bool{}
	addAround := func(at int) {
		for d := -1; d <= 1; d++ {
			points[at+d] = true
		}
	}
	dense := min(16<<10, max(4<<10, int(f.KVs[min(3, len(f.KVs)-1)].Offset)))
	for n := 0; n < dense; n++ {
		points[n] = true
	}
	for _, kv := range f.KVs {
		addAround(int(kv.Offset))
		addAround(int(kv.Offset) + 8)
		addAround(kvTypeAt(kv))
		addAround(kvTypeAt(kv) + 4)
		if kv.Array {
			addAround(kvCountAt(kv))
			addAround(kvCountAt(kv) + 8)
		}
	}
	for _, ti := range f.Tensors {
		addAround(int(ti.InfoOffset))
		addAround(tiDimsAt(ti))
		addAround(tiTypeAt(ti))
		addAround(int(ti.offsetField))
		addAround(int(ti.offsetField) + 8)
		addAround(int(ti.FileOffset))
		addAround(int(ti.FileOffset + ti.Size))
	}
	meta := int(f.DataOffset)
	for n, stride := dense, max(1, (meta-dense)/1000); n < meta; n += stride {
		points[n] = true
	}
	for n, stride := meta, max(1, (size-meta)/300); n < size; n += stride {
		points[n] = true
	}
	addAround(meta)
	addAround(size - 1)

	cuts := make([]int, 0, len(points))
	for n := range points {
		if n >= 0 && n < size {
			cuts = append(cuts, n)
		}
	}
	slices.Sort(cuts)
	c := &checker{t: t}
	for _, n := range cuts {
		want := ErrTruncated
		if n < len(Magic) {
			want = ErrNotGGUF
		}
		c.expect(fmt.Sprintf("cut at %d", n), data[:n], want)
	}
	t.Logf("%d truncations of %d bytes (every byte below %d)", len(cuts), size, dense)
}

// targeted applies one deliberate corruption at a time, at offsets found by parsing the
// original: wrong magic and versions, absurd counts and lengths, bad types, duplicate keys
// and names, bad shapes, tensor offsets and data past the end.
func targeted(t *testing.T, data []byte, f *File) {
	type mutation struct {
		name   string
		mutate func(b []byte) []byte // returns the damaged file (b is a fresh copy)
		want   error
	}
	var ms []mutation
	add := func(name string, want error, mutate func(b []byte) []byte) {
		ms = append(ms, mutation{name, mutate, want})
	}
	set32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { put32(b, at, v); return b }
	}
	set64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { put64(b, at, v); return b }
	}

	for _, magic := range []string{"GGML", "GGJT", "gguf", "\x00\x00\x00\x00", "FUGG", "\x7fELF"} {
		add(fmt.Sprintf("magic %q", magic), ErrNotGGUF, func(b []byte) []byte { copy(b, magic); return b })
	}
	for _, v := range []uint32{0, 1, 4, 0x03000000, 0x00030000, math.MaxUint32} {
		add(fmt.Sprintf("version %#x", v), ErrVersion, set32(4, v))
	}
	add("version 2", nil, set32(4, 2))
	nt, nkv := uint64(len(f.Tensors)), uint64(len(f.KVs))
	for _, v := range []uint64{math.MaxUint64, math.MaxInt64, 1 << 60, maxTensors + 1} {
		add(fmt.Sprintf("tensor count %#x", v), ErrCorrupt, set64(8, v))
	}
	add("tensor count 2^40", ErrTruncated, set64(8, 1<<40))
	add("tensor count +1", errAny, set64(8, nt+1))
	for _, v := range []uint64{math.MaxUint64, math.MaxInt64, 1 << 60, maxKV + 1} {
		add(fmt.Sprintf("kv count %#x", v), ErrCorrupt, set64(16, v))
	}
	add("kv count 2^40", ErrTruncated, set64(16, 1<<40))
	add("kv count +1", errAny, set64(16, nkv+1))
	if nt > 0 {
		// The last KV is read as a tensor info and fails.
		add("kv count -1", errAny, set64(16, nkv-1))
	} else {
		// Bytes after the data section are ignored, so dropping the last KV leaves a valid file.
		add("kv count -1", nil, set64(16, nkv-1))
	}

	// The first key's length.
	for _, v := range []uint64{1 << 63, math.MaxUint64, MaxStringLength + 1} {
		add(fmt.Sprintf("first key length %#x", v), ErrCorrupt, set64(24, v))
	}
	add("first key length 2^30", ErrTruncated, set64(24, MaxStringLength))
	add("first key length past the end", ErrTruncated, set64(24, uint64(len(data))))
	add("first key length 0", ErrCorrupt, set64(24, 0))

	// The token list, an array of strings.
	tokens, ok := f.Lookup("tokenizer.ggml.tokens")
	require.True(t, ok)
	require.True(t, tokens.Array)
	n := uint64(tokens.Len())
	for _, v := range []uint64{1 << 62, math.MaxUint64, MaxArrayElements + 1} {
		add(fmt.Sprintf("token count %#x", v), ErrCorrupt, set64(kvCountAt(tokens), v))
	}
	add("token count 2^30", ErrTruncated, set64(kvCountAt(tokens), MaxArrayElements))
	add("token count +1", errAny, set64(kvCountAt(tokens), n+1))
	add("first token length 2^63", ErrCorrupt, set64(kvCountAt(tokens)+8, 1<<63))
	add("first token length past the end", ErrTruncated, set64(kvCountAt(tokens)+8, uint64(len(data))))
	for _, v := range []int32{int32(TypeArray), 13, -1} {
		add(fmt.Sprintf("token element type %d", v), ErrCorrupt, set32(kvTypeAt(tokens)+4, uint32(v)))
	}
	add("token array as a scalar u8", errAny, set32(kvTypeAt(tokens), uint32(TypeUint8)))

	// A scalar KV's type, and a duplicate key (two keys of equal length made equal).
	last := f.KVs[len(f.KVs)-1]
	add("last value type 13", ErrCorrupt, set32(kvTypeAt(last), 13))
	add("last value type -1", ErrCorrupt, set32(kvTypeAt(last), math.MaxUint32))
	dup := false
	for i := 0; i < len(f.KVs) && !dup; i++ {
		for j := i + 1; j < len(f.KVs) && !dup; j++ {
			a, b := f.KVs[i], f.KVs[j]
			if len(a.Key) == len(b.Key) {
				dup = true
				add(fmt.Sprintf("key %q renamed %q", b.Key, a.Key), ErrCorrupt, func(buf []byte) []byte {
					copy(buf[b.Offset+8:], a.Key)
					return buf
				})
			}
		}
	}
	require.True(t, dup, "no two keys of equal length to make a duplicate")

	// Two tokens of equal length made equal: gguf.cpp accepts the file, llama.cpp's vocab
	// loader aborts on it.
	toks := tokens.Value.([]string)
	for i := 1; i < len(toks); i++ {
		if a, b := toks[i-1], toks[i]; len(a) == len(b) && a != b && a != "" {
			at := kvCountAt(tokens) + 8
			for _, t := range toks[:i] {
				at += 8 + len(t)
			}
			add(fmt.Sprintf("token %d %q renamed %q", i, b, a), ErrCorrupt, func(buf []byte) []byte {
				copy(buf[at+8:], a)
				return buf
			})
			break
		}
	}

	// The layer count, which llama.cpp asserts is in [1, 512] when it loads weights.
	if blocks, ok := f.Lookup(f.Architecture() + ".block_count"); ok && blocks.Type == TypeUint32 && len(f.Tensors) > 0 {
		for _, v := range []uint32{0, 513, math.MaxUint32} {
			add(fmt.Sprintf("block count %d", v), ErrCorrupt, set32(kvTypeAt(blocks)+4, v))
		}
	}

	// Tensors.
	if len(f.Tensors) == 0 {
		add("a tensor in a vocab-only file", errAny, set64(8, 1))
	}
	if len(f.Tensors) >= 2 {
		first, lastT := f.Tensors[0], f.Tensors[len(f.Tensors)-1]
		add("first tensor offset 32", ErrCorrupt, set64(int(first.offsetField), 32))
		add("last tensor offset past the end", ErrCorrupt, set64(int(lastT.offsetField), uint64(len(data))))
		add("last tensor offset 2^64-32", ErrCorrupt, set64(int(lastT.offsetField), math.MaxUint64-31))
		add("last tensor offset -1 alignment", ErrCorrupt, set64(int(lastT.offsetField), uint64(lastT.Offset-f.Alignment)))
		add("last tensor twice as wide", errOutOfFile, set64(tiDimsAt(lastT)+4, uint64(2*lastT.Dims[0])))
		add("last tensor as f64", errOutOfFile, set32(tiTypeAt(lastT), uint32(GGMLTypeF64)))
		add("first tensor as f16", ErrCorrupt, set32(tiTypeAt(first), uint32(GGMLTypeF16)))
		for _, typ := range []int32{4, 5, 31, 36, 38, 43, 1000, -1} {
			add(fmt.Sprintf("first tensor type %d", typ), ErrCorrupt, set32(tiTypeAt(first), uint32(typ)))
		}
		add("first tensor as q4_K (row of 64)", ErrCorrupt, set32(tiTypeAt(first), uint32(GGMLTypeQ4_K)))
		add("first tensor 5 dims", ErrCorrupt, set32(tiDimsAt(first), 5))
		add("first tensor dim -1", ErrCorrupt, set64(tiDimsAt(first)+4, math.MaxUint64))
		if len(first.Dims) >= 2 {
			add("first tensor 2^32 x 2^32", ErrCorrupt, func(b []byte) []byte {
				put64(b, tiDimsAt(first)+4, 1<<32)
				put64(b, tiDimsAt(first)+12, 1<<32)
				return b
			})
		}
		add("first tensor name length 64", errAny, set64(int(first.InfoOffset), 64))
		add("first tensor name length 2^63", ErrCorrupt, set64(int(first.InfoOffset), 1<<63))
		renamed := false
		for i := 1; i < len(f.Tensors) && !renamed; i++ {
			if a, b := f.Tensors[i-1], f.Tensors[i]; len(a.Name) == len(b.Name) {
				renamed = true
				add(fmt.Sprintf("tensor %q renamed %q", b.Name, a.Name), ErrCorrupt, func(buf []byte) []byte {
					copy(buf[b.InfoOffset+8:], a.Name)
					return buf
				})
			}
		}
		add("last byte cut", errOutOfFile, func(b []byte) []byte { return b[:len(b)-1] })
		add("no tensor data", errOutOfFile, func(b []byte) []byte { return b[:f.DataOffset] })
	}
	add("trailing garbage", nil, func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xAB}, 100)...) })
	add("trailing padding", nil, func(b []byte) []byte { return append(b, make([]byte, 31)...) })

	c := &checker{t: t}
	for _, m := range ms {
		c.expect(m.name, m.mutate(bytes.Clone(data)), m.want)
	}
	t.Logf("%d targeted mutations", len(ms))
}

// flip is a byte to damage and which of its bits to flip, one at a time.
type flip struct {
	pos  int
	mask byte
}

// bitFlips flips single bits: all 8 bits of every structural field (the header; each key's
// length, type, element type and count; the first string lengths of each array of strings;
// each tensor's name length, n_dims, dims, type and offset), one bit of each content byte of
// keys, names and scalar values, and one bit of a sample of the string contents.
func bitFlips(t *testing.T, data []byte, f *File) {
	var flips []flip
	all := func(at, n int) {
		for i := at; i < at+n; i++ {
			flips = append(flips, flip{i, 0xFF})
		}
	}
	one := func(at, n int) {
		for i := at; i < at+n; i++ {
			flips = append(flips, flip{i, 1 << (i % 8)})
		}
	}
	all(0, 24)
	for _, kv := range f.KVs {
		all(int(kv.Offset), 8)
		one(int(kv.Offset)+8, len(kv.Key))
		all(kvTypeAt(kv), 4)
		switch {
		case kv.Array:
			all(kvTypeAt(kv)+4, 12)
			at := kvCountAt(kv) + 8
			if strs, ok := kv.Value.([]string); ok {
				for _, s := range strs[:min(3, len(strs))] {
					all(at, 8)
					one(at+8, min(2, len(s)))
					at += 8 + len(s)
				}
			} else {
				one(at, min(8, kv.Len()*kv.Type.Size()))
			}
		case kv.Type == TypeString:
			all(kvTypeAt(kv)+4, 8)
			one(kvTypeAt(kv)+12, min(4, len(kv.Value.(string))))
		default:
			one(kvTypeAt(kv)+4, kv.Type.Size())
		}
	}
	for _, ti := range f.Tensors {
		all(int(ti.InfoOffset), 8)
		one(int(ti.InfoOffset)+8, len(ti.Name))
		all(tiDimsAt(ti), 4+8*len(ti.Dims)+4+8)
	}
	for at, stride := 24, max(211, int(f.DataOffset)/500); at < int(f.DataOffset); at += stride {
		one(at, 1)
	}

	c := &checker{t: t}
	buf := bytes.Clone(data)
	var cases, accepted int
	for _, fl := range flips {
		for bit := range 8 {
			m := byte(1) << bit
			if fl.mask&m == 0 {
				continue
			}
			want := errAny
			switch {
			case fl.pos < 4:
				want = ErrNotGGUF
			case fl.pos < 8 && (fl.pos != 4 || bit != 0): // 3^1 = 2 is a valid version
				want = ErrVersion
			}
			buf[fl.pos] ^= m
			if want == errAny {
				corpusCount.Add(1)
				f2, err, panicked := safeRead(buf)
				switch {
				case panicked != "":
					c.errorf("flip bit %d at %d: panic: %s", bit, fl.pos, panicked)
				case err == nil:
					accepted++
					if ierr := invariants(f2); ierr != nil {
						c.errorf("flip bit %d at %d: accepted, but %v", bit, fl.pos, ierr)
					}
				case !isSentinel(err):
					c.errorf("flip bit %d at %d: %v matches no sentinel", bit, fl.pos, err)
				}
			} else if c.expect(fmt.Sprintf("flip bit %d at %d", bit, fl.pos), buf, want) {
				accepted++
			}
			buf[fl.pos] ^= m
			cases++
		}
	}
	t.Logf("%d single-bit flips over %d bytes: %d rejected, %d still valid files", cases, len(flips), cases-accepted, accepted)
}
