package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
)

// jev decide --runtime decides through llama-server and records the backend; jev parity --json
// prints the keys the parity issue names, starting its own server.
func TestRuntimeFlagAndParityJSON(t *testing.T) {
	model := testenv.SmallModel(t)
	if _, err := os.Stat(filepath.Join(testenv.RepoRoot(t), "third_party", "native", "bin", "llama-server")); err != nil {
		testenv.Missing(t, "needs llama-server (make server): %v", err)
	}
	srv := testenv.LlamaServer(t, model)
	rows := row("r1", 3) + "\n" + row("r2", 2) + "\n"

	code, stdout, stderr := jev(t, rows, "decide", "--runtime", srv.URL, "-q")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
	assert.Equal(t, srv.URL, rec["backend"])
	assert.Equal(t, "server", rec["renderer"])
	assert.Equal(t, "direct-options-v1", rec["prompt_version"])

	code, _, stderr = jev(t, rows, "decide", "--runtime", srv.URL, "--renderer", "go")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "with --runtime the server renders")

	in := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(rows), 0o600))
	code, stdout, stderr = jev(t, "", append([]string{"parity"}, append(modelArgs(t), "--runtime", srv.URL, "-i", in, "--json", "--corpus", "none")...)...)
	require.Equal(t, 0, code, stderr)
	var rep map[string]any
	require.NoError(t, json.Unmarshal([]byte(stdout), &rep))
	for _, k := range []string{"rows", "prompts_identical", "tokens_identical", "max_abs_logprob_diff", "choices_identical"} {
		assert.Contains(t, rep, k)
	}
	assert.Equal(t, 2.0, rep["rows"])
	assert.Equal(t, 2.0, rep["tokens_identical"])
	assert.Equal(t, 2.0, rep["choices_identical"])
	assert.Equal(t, map[string]any{"go_vs_llama": 2.0, "go_vs_server": 2.0, "llama_vs_server": 2.0}, rep["prompts_identical"])
}
