package llama_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/gguf"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

// The corruption corpus through the whole loading path. gguf/corpus_test.go checks, in memory,
// that the Go validator rejects each damaged file with the right sentinel; this test writes
// damaged files to disk and calls llama.LoadModel on each, so the files the validator accepts
// (a flipped bit in a string, a hyper-parameter or the tensor data) reach llama.cpp's own
// loader. Every case must either return an error wrapping ErrLoad, or load and close cleanly;
// a llama.cpp abort would kill the test binary, so the test passing means the process lived.

// corruptCase is one damaged file.
type corruptCase struct {
	name string
	data []byte
}

// loadOutcome tallies LoadModel results over a corpus.
type loadOutcome struct {
	tried, byValidator, byLlama, loaded int
}

func (o *loadOutcome) add(p loadOutcome) {
	o.tried += p.tried
	o.byValidator += p.byValidator
	o.byLlama += p.byLlama
	o.loaded += p.loaded
}

func (o loadOutcome) String() string {
	return fmt.Sprintf("%d files tried through LoadModel: %d rejected by the Go validator, %d by llama.cpp's loader, %d loaded and closed",
		o.tried, o.byValidator, o.byLlama, o.loaded)
}

func isGGUFSentinel(err error) bool {
	for _, s := range []error{gguf.ErrNotGGUF, gguf.ErrVersion, gguf.ErrTruncated, gguf.ErrCorrupt} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// loadCase writes data to path, loads it and closes what loaded. It fails the test unless
// LoadModel returned an error wrapping ErrLoad or a model that closes.
func loadCase(t *testing.T, path string, data []byte, p llama.ModelParams, name string, o *loadOutcome) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, data, 0o644))
	o.tried++
	m, err := llama.LoadModel(path, p)
	switch {
	case err == nil:
		require.NotNil(t, m, name)
		assert.Positive(t, m.Vocab().NVocab(), name)
		require.NoError(t, m.Close(), name)
		o.loaded++
	case !errors.Is(err, llama.ErrLoad):
		t.Errorf("%s: error does not wrap ErrLoad: %v", name, err)
	case isGGUFSentinel(err):
		assert.Nil(t, m, name)
		o.byValidator++
	default:
		assert.Nil(t, m, name)
		o.byLlama++
	}
}

func TestLoadModelSurvivesCorruptFiles(t *testing.T) {
	sources := []struct {
		name      string
		path      func(t *testing.T) string
		vocabOnly bool
	}{
		{"stories260K", func(t *testing.T) string { return testenv.SharedData(t, "models/stories260K.gguf") }, false},
		{"vocab-llama-spm", func(t *testing.T) string {
			return filepath.Join(testenv.LlamaCppDir(t), "models", "ggml-vocab-llama-spm.gguf")
		}, true},
	}
	// llama.cpp logs why it refuses each file at error level: hundreds of lines. Drop them here.
	llama.SetLogger(slog.New(slog.DiscardHandler))
	defer llama.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	var total loadOutcome
	m0, c0, b0 := llama.Live()
	for _, src := range sources {
		t.Run(src.name, func(t *testing.T) {
			data, err := os.ReadFile(src.path(t))
			require.NoError(t, err)
			f, err := gguf.Read(bytes.NewReader(data), int64(len(data)))
			require.NoError(t, err)
			p := llama.DefaultModelParams()
			p.VocabOnly = src.vocabOnly
			path := filepath.Join(t.TempDir(), "case.gguf")
			var o loadOutcome
			cases := corruptions(data, f, !src.vocabOnly)
			for _, c := range cases {
				loadCase(t, path, c.data, p, c.name, &o)
				if t.Failed() {
					break
				}
			}
			t.Logf("%s (%d bytes): %v", src.name, len(data), o)
			assert.Positive(t, o.byLlama+o.loaded, "some damaged files must get past the validator to llama.cpp")
			assert.Positive(t, o.byValidator, "the validator rejects the structural damage")
			total.add(o)
		})
	}
	t.Run("filesystem", func(t *testing.T) { total.add(fileSystemCases(t)) })
	m1, c1, b1 := llama.Live()
	assert.Equal(t, [3]int64{m0, c0, b0}, [3]int64{m1, c1, b1}, "every loaded model was freed")
	t.Logf("corrupt model corpus: %v", total)
}

// corruptions makes the damaged copies of data (whose parsed header is f): truncations at
// every byte of the header and at a stride through the metadata, tensor infos and tensor
// data; every bit of the header flipped; bits of each key's length, type and array count, of
// each tensor info and of each scalar value flipped; one bit flipped at a stride through the rest of
// the metadata and the tensor data; wrong magic and version; absurd counts and string
// lengths; tensor offsets and shapes past the end.
func corruptions(data []byte, f *gguf.File, thorough bool) []corruptCase {
	var cs []corruptCase
	mutate := func(name string, fn func(b []byte) []byte) {
		cs = append(cs, corruptCase{name, fn(bytes.Clone(data))})
	}
	le := binary.LittleEndian
	set32 := func(at int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint32(b[at:], v); return b }
	}
	set64 := func(at int, v uint64) func([]byte) []byte {
		return func(b []byte) []byte { le.PutUint64(b[at:], v); return b }
	}
	size, meta := len(data), int(f.DataOffset)

	// Truncations.
	cuts := map[int]bool{}
	for n := 0; n < 64; n++ {
		cuts[n] = true
	}
	for n := 64; n < meta; n += max(1, meta/100) {
		cuts[n] = true
	}
	for n := meta; n < size; n += max(1, (size-meta)/60) {
		cuts[n] = true
	}
	for _, kv := range f.KVs {
		cuts[int(kv.Offset)+3] = true
		cuts[int(kv.Offset)+8+len(kv.Key)+2] = true
	}
	for _, ti := range f.Tensors {
		cuts[int(ti.InfoOffset)+5] = true
		cuts[int(ti.FileOffset)+1] = true
		cuts[int(ti.FileOffset+ti.Size)-1] = true
	}
	cuts[size-1] = true
	sorted := make([]int, 0, len(cuts))
	for n := range cuts {
		if n >= 0 && n < size {
			sorted = append(sorted, n)
		}
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		cs = append(cs, corruptCase{fmt.Sprintf("cut at %d", n), bytes.Clone(data[:n])})
	}

	// Single-bit flips.
	flipBits := func(i, bit int, what string) {
		mutate(fmt.Sprintf("%s: flip bit %d at %d", what, bit, i), func(b []byte) []byte { b[i] ^= 1 << bit; return b })
	}
	// flipAll flips every bit of n bytes at at.
	flipAll := func(at, n int, what string) {
		for i := at; i < at+n && i < size; i++ {
			for bit := range 8 {
				flipBits(i, bit, what)
			}
		}
	}
	// flipField flips every bit of a little-endian field's low byte and the top bit of each
	// other byte: small changes and absurd ones, which the validator mostly rejects (the
	// in-memory corpus in package gguf flips all of them).
	flipField := func(at, n int, what string) {
		flipAll(at, 1, what)
		for i := at + 1; i < at+n && i < size; i++ {
			flipBits(i, 7, what)
		}
	}
	// flipValue flips the bits of a scalar value, which llama.cpp reads as a hyper-parameter
	// or token id: all of them when thorough, else one a byte and each byte's top bit.
	flipValue := func(at, n int, what string) {
		if thorough {
			flipAll(at, n, what)
			return
		}
		for i := at; i < at+n && i < size; i++ {
			flipBits(i, i%8, what)
			if i%8 != 7 {
				flipBits(i, 7, what)
			}
		}
	}
	flipOne := func(i int, what string) {
		mutate(fmt.Sprintf("%s: flip bit %d at %d", what, i%8, i), func(b []byte) []byte { b[i] ^= 1 << (i % 8); return b })
	}
	flipAll(0, 24, "header")
	for _, kv := range f.KVs {
		typeAt := int(kv.Offset) + 8 + len(kv.Key)
		flipField(int(kv.Offset), 8, kv.Key+" key length")
		flipOne(int(kv.Offset)+8+len(kv.Key)/2, kv.Key+" key")
		flipField(typeAt, 4, kv.Key+" type")
		switch {
		case kv.Array:
			flipField(typeAt+4, 4, kv.Key+" element type")
			flipField(typeAt+8, 8, kv.Key+" count")
		case kv.Type == gguf.TypeString:
			flipField(typeAt+4, 8, kv.Key+" string length")
			if s := kv.Value.(string); s != "" {
				flipOne(typeAt+12+len(s)/2, kv.Key+" string")
			}
		default:
			flipValue(typeAt+4, kv.Type.Size(), kv.Key+" value")
		}
	}
	for _, ti := range f.Tensors[:min(4, len(f.Tensors))] {
		dimsAt := int(ti.InfoOffset) + 8 + len(ti.Name)
		flipField(int(ti.InfoOffset), 8, ti.Name+" name length")
		flipField(dimsAt, 4, ti.Name+" n_dims")
		for d := range ti.Dims {
			flipField(dimsAt+4+8*d, 8, fmt.Sprintf("%s dim %d", ti.Name, d))
		}
		flipField(dimsAt+4+8*len(ti.Dims), 4, ti.Name+" type")
		flipField(dimsAt+8+8*len(ti.Dims), 8, ti.Name+" offset")
	}
	for at := 24; at < meta; at += max(97, meta/100) {
		flipOne(at, "metadata")
	}
	for at := meta; at < size; at += max(1, (size-meta)/40) {
		flipOne(at, "tensor data")
	}

	// Targeted damage.
	for _, magic := range []string{"GGML", "gguf", "\x00\x00\x00\x00", "\x7fELF"} {
		mutate(fmt.Sprintf("magic %q", magic), func(b []byte) []byte { copy(b, magic); return b })
	}
	for _, v := range []uint32{0, 1, 4, math.MaxUint32} {
		mutate(fmt.Sprintf("version %#x", v), set32(4, v))
	}
	for _, v := range []uint64{math.MaxUint64, math.MaxInt64, 1 << 40, uint64(len(f.Tensors)) + 1} {
		mutate(fmt.Sprintf("tensor count %#x", v), set64(8, v))
	}
	for _, v := range []uint64{math.MaxUint64, math.MaxInt64, 1 << 40, uint64(len(f.KVs)) + 1} {
		mutate(fmt.Sprintf("kv count %#x", v), set64(16, v))
	}
	for _, v := range []uint64{0, 1 << 63, math.MaxUint64, 1 << 30, uint64(size)} {
		mutate(fmt.Sprintf("first key length %#x", v), set64(24, v))
	}
	if tokens, ok := f.Lookup("tokenizer.ggml.tokens"); ok && tokens.Array {
		countAt := int(tokens.Offset) + 8 + len(tokens.Key) + 8
		for _, v := range []uint64{math.MaxUint64, 1 << 62, 1 << 30, uint64(tokens.Len()) + 1, 0} {
			mutate(fmt.Sprintf("token count %#x", v), set64(countAt, v))
		}
		for _, v := range []uint64{1 << 63, math.MaxUint64, uint64(size)} {
			mutate(fmt.Sprintf("first token length %#x", v), set64(countAt+8, v))
		}
	}
	if n := len(f.Tensors); n > 0 {
		last := f.Tensors[n-1]
		offsetAt := int(last.InfoOffset) + 8 + len(last.Name) + 4 + 8*len(last.Dims) + 4
		for _, v := range []uint64{uint64(size), math.MaxUint64 - 31, 1 << 40} {
			mutate(fmt.Sprintf("last tensor offset %#x", v), set64(offsetAt, v))
		}
		mutate("last tensor 64 times wider", set64(int(last.InfoOffset)+8+len(last.Name)+4, uint64(64*last.Dims[0])))
		mutate("no tensor data", func(b []byte) []byte { return b[:meta] })
	}
	mutate("trailing garbage", func(b []byte) []byte { return append(b, bytes.Repeat([]byte{0xAB}, 100)...) })
	return cs
}

// fileSystemCases loads what is not a regular, readable GGUF file: a missing file, a
// zero-length file, a directory, a device, a symlink loop and (unless the test runs as root,
// whose reads chmod cannot block) an unreadable file.
func fileSystemCases(t *testing.T) loadOutcome {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.gguf")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	loop := filepath.Join(dir, "loop.gguf")
	require.NoError(t, os.Symlink(loop, loop))
	toDir := filepath.Join(dir, "dir.gguf")
	require.NoError(t, os.Symlink(dir, toDir))

	var o loadOutcome
	for _, c := range []struct {
		name, path string
		want       error
	}{
		{"missing", filepath.Join(dir, "missing.gguf"), fs.ErrNotExist},
		{"zero-length", empty, gguf.ErrNotGGUF},
		{"directory", dir, gguf.ErrNotGGUF},
		{"symlink to a directory", toDir, gguf.ErrNotGGUF},
		{"device", os.DevNull, gguf.ErrNotGGUF},
		{"symlink loop", loop, nil},
	} {
		o.tried++
		m, err := llama.LoadModel(c.path, llama.DefaultModelParams())
		assert.Nil(t, m, c.name)
		assert.ErrorIs(t, err, llama.ErrLoad, c.name)
		if c.want != nil {
			assert.ErrorIs(t, err, c.want, c.name)
		}
		o.byValidator++
	}

	// chmod 000: a permission error for a normal user; root reads the file anyway, so there
	// the same (valid) file must load, and the log says the case could not be made.
	data, err := os.ReadFile(testenv.SharedData(t, "models/stories260K.gguf"))
	require.NoError(t, err)
	locked := filepath.Join(dir, "unreadable.gguf")
	require.NoError(t, os.WriteFile(locked, data, 0o000))
	o.tried++
	m, err := llama.LoadModel(locked, llama.DefaultModelParams())
	if f, openErr := os.Open(locked); openErr == nil {
		_ = f.Close()
		t.Logf("unreadable file: this test runs as uid %d, which reads a chmod-000 file anyway; it loaded (%v)", os.Geteuid(), err)
		require.NoError(t, err)
		require.NoError(t, m.Close())
		o.loaded++
	} else {
		assert.Nil(t, m)
		assert.ErrorIs(t, err, llama.ErrLoad)
		assert.ErrorIs(t, err, fs.ErrPermission)
		o.byValidator++
	}
	t.Logf("file system: %v", o)
	return o
}
