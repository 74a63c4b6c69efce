package batch_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
)

// Render writes each row's prompt record (or the detector's prompt), and an error record for a
// row it cannot render; the prompt is the one the Decider decides.
func TestRender(t *testing.T) {
	d, err := openSmall(t)(context.Background(), gojev.Options{Detect: true})
	require.NoError(t, err)
	defer d.Close()
	in := rowLine("r1", 3) + "\n" + `{"id": "bad"}` + "\n"
	for _, detect := range []bool{false, true} {
		var out strings.Builder
		require.NoError(t, batch.Render(context.Background(), d, strings.NewReader(in), &out, detect, nil))
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		require.Len(t, lines, 2)
		var rec batch.PromptRecord
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
	require.NoError(t, batch.Render(context.Background(), d, strings.NewReader(rowLine("r1", 3)), &out, false, nil))
	assert.Contains(t, out.String(), `"prompt_sha256":"`+res.PromptSHA256+`"`, "the prompt decided")
}
