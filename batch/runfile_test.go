package batch_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/debias"
)

func TestRunFileRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	results := filepath.Join(dir, "out.jsonl")
	assert.Equal(t, results+".run.json", batch.RunFilePath(results))
	_, err := batch.ReadRunFile(batch.RunFilePath(results))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	none, err := batch.RunFileOf(results)
	assert.NoError(t, err, "a results file without a run file is no error for RunFileOf")
	assert.Nil(t, none)

	m := &batch.RunFile{Input: "rows.jsonl", PromptVersion: "direct-options-v1", Debias: debias.PriDe, Shard: "1/4",
		Model: &debias.ModelID{File: "m.gguf", SHA256: "ab"}, Rows: 3, Decided: 2, Errors: 1}
	require.NoError(t, m.Save(batch.RunFilePath(results)))
	got, err := batch.ReadRunFile(batch.RunFilePath(results))
	require.NoError(t, err)
	assert.Equal(t, m.Input, got.Input)
	assert.Equal(t, m.Shard, got.Shard)
	assert.Equal(t, *m.Model, *got.Model)
	beside, err := batch.RunFileOf(results)
	require.NoError(t, err)
	assert.Equal(t, got, beside)

	// The scheme for many options in snake case; a run file of an earlier build, in Go's field
	// names, reads alike.
	m.Knockout = &gojev.KnockoutOptions{Method: gojev.ManyShortlist, Grouping: "shuffle", Shortlist: 8}
	require.NoError(t, m.Save(batch.RunFilePath(results)))
	data, err := os.ReadFile(batch.RunFilePath(results))
	require.NoError(t, err)
	assert.Contains(t, string(data), `"method": "shortlist"`)
	assert.Contains(t, string(data), `"shortlist": 8`)
	old := filepath.Join(dir, "old.run.json")
	require.NoError(t, os.WriteFile(old, []byte(`{"prompt_version": "direct-options-v1", "knockout": {"Method": "knockout", "Grouping": "file", "Seed": 3}}`), 0o644))
	got, err = batch.ReadRunFile(old)
	require.NoError(t, err)
	assert.Equal(t, gojev.KnockoutOptions{Method: gojev.ManyKnockout, Grouping: "file", Seed: 3}, got.KnockoutOptions())

	for name, text := range map[string]string{"cut short": `{"prompt_version": "dir`, "not an object": `[1, 2]`, "empty": ``} {
		p := filepath.Join(dir, name+".run.json")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		_, err := batch.ReadRunFile(p)
		assert.ErrorIs(t, err, batch.ErrRunFile, name)
		assert.ErrorContains(t, err, p, "%s: the error names the file", name)
		_, err = batch.RunFileOf(strings.TrimSuffix(p, ".run.json"))
		assert.ErrorIs(t, err, batch.ErrRunFile, "%s: RunFileOf refuses a run file it cannot read", name)
	}
}

func TestRunFilesDisagree(t *testing.T) {
	base := func() *batch.RunFile {
		return &batch.RunFile{PromptVersion: "direct-options-v1", Model: &debias.ModelID{Name: "m", SHA256: "ab"}, Shard: "0/4"}
	}
	assert.Empty(t, base().Disagrees(base()))
	for _, tc := range []struct {
		change func(*batch.RunFile)
		want   string
	}{
		{func(m *batch.RunFile) { m.Model.SHA256 = "cd" }, "models"},
		{func(m *batch.RunFile) { m.PromptVersion = "binary-candidates-v1" }, "contracts"},
		{func(m *batch.RunFile) { m.Debias = debias.PriDe }, "bias control"},
		{func(m *batch.RunFile) { m.Permute = 2 }, "bias control"},
		{func(m *batch.RunFile) { m.Knockout = &gojev.KnockoutOptions{Grouping: "file"} }, "knockout"},
		{func(m *batch.RunFile) { m.Detect = &batch.RunDetect{Threshold: 0.5} }, "injection detection"},
		{func(m *batch.RunFile) { m.AbstainBelow = 0.4 }, "abstention"},
		{func(m *batch.RunFile) { m.Shard = "1/8" }, "shard counts"},
		{func(m *batch.RunFile) { m.Prior = &debias.Prior{PromptVersion: "x"} }, "PriDe priors"},
	} {
		b := base()
		tc.change(b)
		assert.Contains(t, base().Disagrees(b), tc.want)
	}
	// Another shard of the same count, and the default knockout spelled out, agree.
	b := base()
	b.Shard = "3/4"
	b.Knockout = &gojev.KnockoutOptions{Grouping: "shuffle"}
	assert.Empty(t, base().Disagrees(b))
}
