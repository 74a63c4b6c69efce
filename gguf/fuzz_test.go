package gguf

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gojev/gojev/internal/testenv"
)

// vocabSeedPath returns llama.cpp's ggml-vocab-llama-spm.gguf, or "" when the llama.cpp tree
// is absent. It does not go through testenv.LlamaCppDir, which would skip the whole fuzz
// target (and its synthetic seeds) rather than only these seeds.
func vocabSeedPath(tb testing.TB) string {
	dir := os.Getenv("LLAMA_CPP_DIR")
	if dir == "" {
		dir = filepath.Join(testenv.RepoRoot(tb), "third_party", "llama.cpp")
	}
	p := filepath.Join(dir, "models", "ggml-vocab-llama-spm.gguf")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// FuzzRead feeds arbitrary bytes to Read: it must never panic, must fail only with one of
// the sentinels inside a *FormatError whose offset lies within the input, must return a
// File whose invariants hold when it succeeds, and must allocate in proportion to the
// input's size (a count or length of 2^60 in a 100-byte input allocates nothing for it).
//
// The seeds are the header of llama.cpp's llama-spm vocab file (its first 4 KiB, cut inside
// the token list, and the same header cut after its 14 scalar KVs, a valid file), the
// synthetic files of TestSynthetic and a small valid file with tensors.
func FuzzRead(f *testing.F) {
	f.Add(validFile())
	for _, c := range synthCases() {
		if len(c.data) <= 4096 {
			f.Add(c.data)
		}
	}
	if p := vocabSeedPath(f); p != "" {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:min(len(data), 4096)])
		if vocab, err := readBytes(data); err == nil {
			// Keep the KVs that end within the first 4 KiB: a valid vocab header.
			k := 0
			for k < len(vocab.KVs) && vocab.KVs[k].Offset <= 4096 {
				k++
			}
			k-- // KVs[k] starts within 4 KiB but may end beyond it
			head := append([]byte(nil), data[:vocab.KVs[k].Offset]...)
			binary.LittleEndian.PutUint64(head[16:], uint64(k))
			if _, err := readBytes(head); err != nil {
				f.Fatalf("the cut vocab header should be valid: %v", err)
			}
			f.Add(head)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		file, err := readBytes(data)
		runtime.ReadMemStats(&after)

		if err != nil {
			if !isSentinel(err) {
				t.Fatalf("error matches no sentinel: %v", err)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error is not a *FormatError: %v", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(data)) {
				t.Fatalf("error offset %d outside the %d-byte input: %v", fe.Offset, len(data), err)
			}
		} else if ierr := invariants(file); ierr != nil {
			t.Fatalf("accepted a file that breaks an invariant: %v", ierr)
		}

		// Each byte of input may become a few Go values (a 14-byte KV is a KV struct, a
		// key, a boxed value and two map entries), so allow a generous constant factor,
		// plus the read buffer and preallocated maps.
		limit := 128*uint64(len(data)) + 1<<20
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > limit {
			t.Fatalf("allocated %d bytes for a %d-byte input (limit %d)", alloc, len(data), limit)
		}
	})
}
