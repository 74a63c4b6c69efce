package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/jsonl"
	"github.com/gojev/gojev/internal/testenv"
)

// rowLine is testenv.RowLine: a row with n options o0..o(n-1).
var rowLine = testenv.RowLine

// renderRows writes each row's prompt record (or the detector's prompt), and an error record for a
// row it cannot render; the prompt is the one the Decider decides.
func TestRenderRows(t *testing.T) {
	d, err := gojev.Open(context.Background(), testenv.SmallModel(t), gojev.Options{Detect: true, Runtime: backend.InProcessOptions{NThreads: 2}})
	require.NoError(t, err)
	defer d.Close()
	in := rowLine("r1", 3) + "\n" + `{"id": "bad"}` + "\n"
	for _, detect := range []bool{false, true} {
		var out strings.Builder
		require.NoError(t, renderRows(context.Background(), d, strings.NewReader(in), &out, detect, jsonl.Encoder()))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Len(t, lines, 2)
		var rec promptRecord
		require.NoError(t, json.Unmarshal([]byte(lines[0]), &rec))
		assert.Equal(t, `"r1"`, string(rec.ID))
		assert.Len(t, rec.PromptSHA256, 64)
		assert.Positive(t, rec.NPromptTokens)
		assert.Equal(t, "go", rec.Renderer)
		want := "direct-options-v1"
		if detect {
			want = "injection-check-v1"
		}
		assert.Equal(t, want, rec.PromptVersion)
		assert.Contains(t, rec.Prompt, "hello", "the row's evidence")
		var bad batch.ErrorRecord
		require.NoError(t, json.Unmarshal([]byte(lines[1]), &bad))
		assert.Equal(t, 2, bad.Line)
		assert.Contains(t, bad.Error, `missing "state"`)
	}
	row, err := contract.ParseRow([]byte(rowLine("r1", 3)))
	require.NoError(t, err)
	res, err := d.Decide(context.Background(), row)
	require.NoError(t, err)
	var out strings.Builder
	require.NoError(t, renderRows(context.Background(), d, strings.NewReader(rowLine("r1", 3)), &out, false, jsonl.Encoder()))
	assert.Contains(t, out.String(), `"prompt_sha256":"`+res.PromptSHA256+`"`, "the prompt decided")
}
