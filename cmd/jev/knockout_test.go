package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/app/report"
)

// TestKnockoutRowsThroughTheTools: rows of 20 options go through jev decide (one record a row,
// its passes and distribution), jev report (labels over all 20 options) and jev calibrate (the
// "knockout" scoring, fitted on the distribution), as any rows do; and a second run with
// another window gives the same records.
func TestKnockoutRowsThroughTheTools(t *testing.T) {
	var lines []string
	for r := range 4 {
		var opts []string
		for i := range 20 {
			opts = append(opts, fmt.Sprintf(`{"id": "intent%02d", "description": "Intent number %d."}`, i, i))
		}
		lines = append(lines, fmt.Sprintf(`{"id": "k%d", "state": {"message": "message %d"}, "question": "Which intent?", "options": [%s], "label": "intent%02d"}`,
			r, r, strings.Join(opts, ", "), 3*r))
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
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

	code, _, stderr = jev(t, "", "report", out, "--json", filepath.Join(dir, "r.json"))
	require.Equal(t, 0, code, stderr)
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Runs, 1)
	assert.Equal(t, 4, rep.Runs[0].Rows)
	assert.NotEmpty(t, rep.Runs[0].Labels, "per-label figures over the rows' 20 labels")
	assert.Empty(t, rep.Runs[0].Letters, "a pass's letters are not the row's")

	prof := filepath.Join(dir, "profile.json")
	code, stdout, stderr := jev(t, "", "calibrate", out, "--folds", "2", "-o", prof)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "scoring knockout: 4 labelled fitting rows")
	p, err := calibrate.Load(prof)
	require.NoError(t, err)
	require.Contains(t, p.Scorings, "knockout")
	code, _, stderr = jev(t, "", withModel(t, "decide", "-q", "--many", "knockout", "-i", in, "-o", filepath.Join(dir, "cal.jsonl"), "--calibration", prof)...)
	require.Equal(t, 0, code, stderr)
	for _, r := range readResults(t, filepath.Join(dir, "cal.jsonl")) {
		require.NotNil(t, r.Calibration)
		assert.Len(t, r.Calibration.Probabilities, 20, "calibrated over every option")
		assert.Equal(t, "knockout", r.Calibration.Scoring)
	}
}
