package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/app/bench"
)

// TestBenchScoringsSweep runs jev bench --scorings on 6 Banking77 rows with the small model, in
// blocks of 4 (two blocks, the second starting with the other scoring): each scoring's records
// are what jev decide writes under the same flags (decoding is deterministic per prompt, so the
// interleaving changes nothing), and the figures count what the records hold.
func TestBenchScoringsSweep(t *testing.T) {
	rows := firstRows(t, "banking77/sample-200-8opt.jsonl", 6)
	dir := t.TempDir()
	code, _, stderr := jev(t, "", withModel(t, "decide", "--permute", "2", "-i", rows, "-o", filepath.Join(dir, "decide-permute-2.jsonl"))...)
	require.Equal(t, 0, code, stderr)
	res := filepath.Join(dir, "sweep")
	code, stdout, stderr := jev(t, "", withModel(t, "bench", "-i", rows, "--scorings", "raw,permute-2,detect", "--block", "4",
		"--results", res, "-o", filepath.Join(dir, "sweep.json"))...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "6 rows under 3 scorings, blocks of 4 rows interleaved")
	assert.Contains(t, stdout, "against raw, in this one run")

	want := readResults(t, filepath.Join(dir, "decide-permute-2.jsonl"))
	got := readResults(t, filepath.Join(res, "permute-2.jsonl"))
	raw := readResults(t, filepath.Join(res, "raw.jsonl"))
	require.Len(t, got, 6)
	require.Len(t, raw, 6)
	correct := 0
	for i := range want {
		assert.Equal(t, want[i].PromptSHA256, got[i].PromptSHA256, "row %d", i)
		assert.Equal(t, want[i].Chosen, got[i].Chosen, "row %d", i)
		assert.Equal(t, want[i].Debias.Scores, got[i].Debias.Scores, "row %d: the same shifted prompts, the same scores", i)
		assert.Equal(t, want[i].Options, got[i].Options, "row %d", i)
		assert.Equal(t, want[i].Options, raw[i].Options, "row %d: the raw scoring reads shift 0's prompt", i)
		assert.Nil(t, raw[i].Debias)
		if *got[i].Correct {
			correct++
		}
	}
	meta, ok := loadRunMeta(filepath.Join(res, "permute-2.jsonl.run.json"))
	require.True(t, ok)
	assert.Equal(t, debias.Cyclic, meta.Debias)
	assert.Equal(t, 2, meta.Permute)
	require.NotNil(t, meta.Model)
	assert.Len(t, meta.Model.SHA256, 64)

	var sw bench.Sweep
	b, err := os.ReadFile(filepath.Join(dir, "sweep.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &sw))
	require.Len(t, sw.Paths, 3)
	assert.Equal(t, 4, sw.Block)
	p := sw.Paths[1]
	assert.Equal(t, "permute-2", p.Scoring)
	assert.Equal(t, 6, p.Rows)
	assert.Equal(t, correct, p.Correct)
	assert.InDelta(t, float64(correct)/6, p.Accuracy, 1e-12)
	assert.Equal(t, 2.0, p.PromptsPerRow)
	assert.Equal(t, 1.0, sw.Paths[0].PromptsPerRow)
	assert.Equal(t, 1.0, sw.Paths[0].WallVsBase)
	assert.InDelta(t, p.WallS/sw.Paths[0].WallS, p.WallVsBase, 1e-12)
	// Two shifts decode their shared prefix once: more than one decode's tokens, fewer than two.
	assert.Greater(t, p.DecodedVsBase, 1.2)
	assert.Less(t, p.DecodedVsBase, 2.0)

	// +detect: the same decision prompts as raw, and the injection detector's question beside
	// each (flagged rows abstain); its run file says so.
	det := readResults(t, filepath.Join(res, "detect.jsonl"))
	require.Len(t, det, 6)
	for i := range det {
		assert.Equal(t, raw[i].Options, det[i].Options, "row %d", i)
		require.NotNil(t, det[i].Suspect, "row %d", i)
		assert.Equal(t, det[i].Suspect.Flagged, det[i].Abstained, "row %d: a flagged row abstains", i)
	}
	dmeta, ok := loadRunMeta(filepath.Join(res, "detect.jsonl.run.json"))
	require.True(t, ok)
	require.NotNil(t, dmeta.Detect)
	assert.True(t, dmeta.Detect.Abstain)
	assert.Equal(t, "detect", sw.Paths[2].Scoring)
	assert.Equal(t, 2.0, sw.Paths[2].PromptsPerRow)
	assert.Greater(t, sw.Paths[2].DecodedVsBase, 1.0)

	code, _, stderr = jev(t, "", withModel(t, "bench", "-i", rows, "--scorings", "raw,pride")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "needs --prior FILE")
	code, _, stderr = jev(t, "", withModel(t, "bench", "-i", rows, "--scorings", "raw,permute-x")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown scoring "permute-x"`)
}

// jev bench --paths prepare,engine prepares the rows on the host alone, then decodes them:
// the prepared prompts are the engine's, and the prepare/decode ratio is printed and saved.
func TestBenchPreparePath(t *testing.T) {
	rows := firstRows(t, "banking77/sample-200-8opt.jsonl", 6)
	out := filepath.Join(t.TempDir(), "bench.json")
	code, stdout, stderr := jev(t, "", withModel(t, "bench", "-i", rows, "--paths", "prepare,engine", "-o", out)...)
	require.Equal(t, 0, code, stderr)
	assert.Regexp(t, `\n  prepare\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s+0   \(host only: [0-9]+ rows at once, nothing decoded\)`, stdout)
	assert.Contains(t, stdout, "prepare/decode ")
	var rep bench.Report
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.NotNil(t, rep.Prepare)
	require.NotNil(t, rep.Engine)
	assert.Equal(t, rep.Engine.PromptTokens, rep.Prepare.PromptTokens, "the same prompts, token for token in count")
	assert.Positive(t, rep.Prepare.Workers)
	assert.InDelta(t, rep.Prepare.DecisionsPerS/rep.Engine.DecisionsPerS, rep.Ratios.PrepareVsDecode, 1e-9)
	assert.Greater(t, rep.Ratios.PrepareVsDecode, 1.0, "preparing a row costs less than deciding it")
}
