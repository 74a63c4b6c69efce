package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/gguf"
	"github.com/gojev/gojev/internal/testenv"
)

// jev quantize turns the tiny synthetic f16 model's matrices into q8_0 (the norms stay f32), a
// model jev check accepts; an unknown type is a usage error, a missing input an error.
func TestQuantize(t *testing.T) {
	in := testenv.SyntheticModel(t, "tiny")
	out := filepath.Join(t.TempDir(), "tiny-q8_0.gguf")
	code, stdout, stderr := jev(t, "", "quantize", in, out, "--type", "q8_0", "-t", "2")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "quantize: wrote "+out+" (q8_0)")
	f, err := gguf.Open(out)
	require.NoError(t, err)
	types := map[string]gguf.GGMLType{}
	for _, ti := range f.Tensors {
		types[ti.Name] = ti.Type
	}
	assert.Equal(t, gguf.GGMLTypeQ8_0, types["blk.0.ffn_down.weight"])
	assert.Equal(t, gguf.GGMLTypeF32, types["blk.0.attn_norm.weight"])
	code, _, stderr = jev(t, "", "check", "-m", out)
	assert.Equal(t, 0, code, stderr)

	code, _, stderr = jev(t, "", "quantize", in, out, "--type", "q3_x")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `--type "q3_x": want one of f16, q8_0`)
	code, _, stderr = jev(t, "", "quantize", filepath.Join(t.TempDir(), "none.gguf"), out)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "none.gguf")
}
