package llama_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/llama"
)

// TestLoadBackendNamesTheFileAndTheReason: a plugin that cannot be loaded is an error naming
// the file and the loader's or ggml's reason, and registers nothing. (Loading a real plugin is
// internal/gpucheck's test: its devices would stay registered in this process.)
func TestLoadBackendNamesTheFileAndTheReason(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "libggml-text.so")
	require.NoError(t, os.WriteFile(text, []byte("not an ELF file"), 0o644))
	libm, _ := filepath.Glob("/lib/x86_64-linux-gnu/libm.so.6")
	before := len(llama.Devices())
	cases := []struct {
		name, path, reason string
	}{
		{"missing", filepath.Join(dir, "libggml-none.so"), "no such file"},
		{"folder", dir, "a folder, not a plugin file"},
		{"not a library", text, "failed to load " + text},
	}
	if len(libm) == 1 {
		cases = append(cases, struct{ name, path, reason string }{"a library that is not a plugin", libm[0], "failed to find ggml_backend_init"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			name, err := llama.LoadBackend(c.path)
			require.Error(t, err)
			assert.Empty(t, name)
			assert.True(t, errors.Is(err, llama.ErrBackendLoad))
			var le *llama.BackendLoadError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, c.path, le.Path)
			assert.Contains(t, le.Reason, c.reason)
			assert.Contains(t, err.Error(), c.path)
		})
	}
	assert.Len(t, llama.Devices(), before, "nothing registered")
	assert.Empty(t, llama.LoadedBackends())
}
