package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/testenv"
)

// manyRows writes 4 labelled rows of 20 options (ids prefix0 … prefix3) into dir.
func manyRows(t *testing.T, dir, prefix string) string {
	var lines []string
	for r := range 4 {
		var opts []string
		for i := range 20 {
			opts = append(opts, fmt.Sprintf(`{"id": "intent%02d", "description": "Intent number %d."}`, i, i))
		}
		lines = append(lines, fmt.Sprintf(`{"id": "%s%d", "state": {"message": "message %d"}, "question": "Which intent?", "options": [%s], "label": "intent%02d"}`,
			prefix, r, r, strings.Join(opts, ", "), 3*r))
	}
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return in
}

// TestKnockoutRowsThroughTheTools: rows of 20 options go through jev decide (one record a row,
// its passes and distribution), jev report (labels over all 20 options) and jev calibrate (the
// "knockout" scoring, fitted on the distribution), as any rows do; and a second run with
// another window gives the same records.
func TestKnockoutRowsThroughTheTools(t *testing.T) {
	dir := t.TempDir()
	in := manyRows(t, dir, "k")
	out := filepath.Join(dir, "out.jsonl")
	code, _, stderr := jev(t, "", withModel(t, "decide", "-q", "--many", "knockout", "-i", in, "-o", out)...)
	require.Equal(t, 0, code, stderr)
	recs := readResults(t, out)
	require.Len(t, recs, 4)
	for _, r := range recs {
		require.NotNil(t, r.Knockout, "row %s", r.ID)
		assert.Len(t, r.Knockout.Passes, 3)
		assert.Len(t, r.Knockout.Distribution, 20)
		assert.Equal(t, "shuffle", r.Knockout.Grouping)
	}
	again := filepath.Join(dir, "again.jsonl")
	code, _, stderr = jev(t, "", withModel(t, "decide", "-q", "--many", "knockout", "--window", "1", "-i", in, "-o", again)...)
	require.Equal(t, 0, code, stderr)
	for i, r := range readResults(t, again) {
		assert.Equal(t, recs[i].Knockout.Distribution, r.Knockout.Distribution, "row %d: the window changes nothing", i)
	}

	run := reportAndCalibrate(t, dir, in, out, "knockout")
	assert.NotEmpty(t, run.Labels, "per-label figures over the rows' 20 labels")
	assert.Empty(t, run.Letters, "a pass's letters are not the row's")
}

// reportAndCalibrate reads out, 4 rows of 20 options decided with --many many, through jev
// report (one run of 4 rows, returned) and jev calibrate (a profile of the scoring many), and
// decides in again with that profile: every row calibrated over its 20 options.
func reportAndCalibrate(t *testing.T, dir, in, out, many string) report.RunReport {
	t.Helper()
	code, _, stderr := jev(t, "", "report", out, "--json", filepath.Join(dir, "r.json"))
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, 4, rep.Runs[0].Rows)

	prof := filepath.Join(dir, "profile.json")
	code, stdout, stderr := jev(t, "", "calibrate", out, "--folds", "2", "-o", prof)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "scoring "+many+": 4 labelled fitting rows")
	p, err := calibrate.Load(prof)
	require.NoError(t, err)
	require.Contains(t, p.Scorings, many)
	code, _, stderr = jev(t, "", withModel(t, "decide", "-q", "--many", many, "-i", in, "-o", filepath.Join(dir, "cal.jsonl"), "--calibration", prof)...)
	require.Equal(t, 0, code, stderr)
	for _, r := range readResults(t, filepath.Join(dir, "cal.jsonl")) {
		require.NotNil(t, r.Calibration)
		assert.Len(t, r.Calibration.Probabilities, 20, "calibrated over every option")
		assert.Equal(t, many, r.Calibration.Scoring)
	}
	return rep.Runs[0]
}

// TestShortlistRowsThroughTheTools: rows of 20 options go through jev decide --many shortlist
// (a binary-candidates-v1 record of the 16 best ranked, with the ranking and a distribution
// over all 20), jev report and jev calibrate (the "shortlist" scoring, fitted on that
// distribution), and back through jev decide --calibration.
func TestShortlistRowsThroughTheTools(t *testing.T) {
	dir := t.TempDir()
	in := manyRows(t, dir, "s")
	out := filepath.Join(dir, "out.jsonl")
	code, _, stderr := jev(t, "", withModel(t, "decide", "-q", "--many", "shortlist", "-i", in, "-o", out)...)
	require.Equal(t, 0, code, stderr)
	recs := readResults(t, out)
	require.Len(t, recs, 4)
	for _, r := range recs {
		require.NotNil(t, r.Shortlist, "row %s", r.ID)
		assert.Equal(t, "binary-candidates-v1", r.PromptVersion)
		assert.Len(t, r.Candidates, 16)
		assert.Len(t, r.Shortlist.Scores, 20)
		assert.Len(t, r.Shortlist.Distribution, 20)
		assert.True(t, r.Uncalibrated, "no profile ships for the small model")
	}
	reportAndCalibrate(t, dir, in, out, "shortlist")
}

// TestShortlistOnBanking77 is the CI check of make knockout's shortlist run: the first 12 of
// its 77-option Banking77 rows (scripts/banking77-rows.py) on the default model, with no flags
// (the shortlist is the default). Measured on the 300: the gold intent among the 16 kept on
// 91 %, right on 54 %; on these 12, 11 kept and 5 right (ShortlistRule; 6 under the first
// build's rule). Here at least 10 of 12 kept and 4 right, leaving a row for another CPU's
// rounding (chance: 0.16 of 12). The shipped profile's shortlist temperature (above 1: the
// rule is overconfident) calibrates every row. About 3.5 minutes on two cores.
func TestShortlistOnBanking77(t *testing.T) {
	model := testenv.DefaultModel(t)
	dir := qualityDir(t)
	rows := filepath.Join(dir, "b77-77-12.jsonl")
	cmd := exec.Command("python3", filepath.Join(testenv.RepoRoot(t), "scripts", "banking77-rows.py"),
		testenv.SharedData(t, "banking77/test.csv"), testenv.SharedData(t, "banking77/categories.json"), "--rows", "12")
	b, err := cmd.Output()
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(rows, b, 0o644))
	out := filepath.Join(dir, "shortlist-12.jsonl")
	code, _, stderr := jev(t, "", "decide", "-m", model, "-t", "2", "-q", "-i", rows, "-o", out)
	require.Equal(t, 0, code, stderr)
	kept, right := 0, 0
	for _, r := range readResults(t, out) {
		require.NotNil(t, r.Shortlist, "the default for more than 16 options")
		require.NotNil(t, r.Calibration, "the shipped profile's shortlist scoring")
		assert.Equal(t, "shortlist", r.Calibration.Scoring)
		assert.False(t, r.Uncalibrated)
		assert.Less(t, r.Probability, r.Calibration.UncalibratedProbability, "a temperature above 1 lowers the choice's share")
		if slices.Contains(r.Shortlist.Kept, r.Label) {
			kept++
		}
		if r.Chosen == r.Label {
			right++
		}
	}
	t.Logf("Banking77, 77 options, 12 rows, --many shortlist: gold kept on %d, right on %d", kept, right)
	assert.GreaterOrEqual(t, kept, 10)
	assert.GreaterOrEqual(t, right, 4)
}
