package batch_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/batch"
)

// MergeFile writes the merged file and its run file only when the parts add up, and never
// over one of its inputs.
func TestMergeFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	var rows strings.Builder
	for l := 1; l <= 4; l++ {
		rows.WriteString(rowLine(fmt.Sprintf("r%d", l), 2) + "\n")
	}
	require.NoError(t, os.WriteFile(in, []byte(rows.String()), 0o644))
	var parts []string
	for i := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", i))
		var recs strings.Builder
		for l := i + 1; l <= 4; l += 2 {
			fmt.Fprintf(&recs, `{"id":"r%d","prompt_version":"direct-options-v1","chosen":"o0","line":%d}`+"\n", l, l)
		}
		require.NoError(t, os.WriteFile(p, []byte(recs.String()), 0o644))
		meta := &batch.RunFile{PromptVersion: "direct-options-v1", Shard: fmt.Sprintf("%d/2", i), Finished: true}
		require.NoError(t, meta.Save(batch.RunFilePath(p)))
		parts = append(parts, p)
	}
	out := filepath.Join(dir, "merged.jsonl")

	res, problems, err := batch.MergeFile(in, parts[:1], out, []string{"merge"})
	require.NoError(t, err)
	require.NotEmpty(t, problems)
	assert.Equal(t, "shard", problems[0].Kind)
	assert.NotNil(t, res)
	assert.NoFileExists(t, out, "nothing written while the parts do not add up")

	res, problems, err = batch.MergeFile(in, parts, out, []string{"merge", "-i", in})
	require.NoError(t, err)
	assert.Empty(t, problems)
	assert.Equal(t, 4, res.Summary.Rows)
	assert.Equal(t, []int{1, 2, 3, 4}, inputLines(t, out))
	meta, err := batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Equal(t, []string{"merge", "-i", in}, meta.Args)
	assert.Equal(t, parts, meta.Parts)

	_, _, err = batch.MergeFile(in, parts, parts[1], nil)
	var se *batch.SetupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Output", se.Field)
	assert.ErrorContains(t, err, parts[1]+" is also an input of the merge")
}
