package batch_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

func TestRunFileOptions(t *testing.T) {
	for _, tc := range []struct {
		meta batch.RunFile
		want gojev.Options
	}{
		// Written before PriDe was the default: no debias is the raw scores.
		// No scheme recorded: rows of more than 16 options were decided under the binary contract.
		{batch.RunFile{PromptVersion: contract.PromptVersion}, gojev.Options{Contract: gojev.Direct, Debias: debias.None, Knockout: gojev.KnockoutOptions{Method: gojev.ManyBinary, Grouping: "shuffle"}}},
		{batch.RunFile{PromptVersion: contract.PromptVersion, Debias: "default"}, gojev.Options{Contract: gojev.Direct, Debias: debias.Default, Knockout: gojev.KnockoutOptions{Method: gojev.ManyBinary, Grouping: "shuffle"}}},
		{batch.RunFile{PromptVersion: contract.PromptVersion, Debias: "default", Knockout: &gojev.KnockoutOptions{Method: gojev.ManyShortlist, Grouping: "shuffle", Shortlist: 16}},
			gojev.Options{Contract: gojev.Direct, Debias: debias.Default, Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist, Grouping: "shuffle", Shortlist: 16}}},
		{batch.RunFile{PromptVersion: contract.BinaryPromptVersion, Debias: debias.Contextual},
			gojev.Options{Contract: gojev.Binary, Debias: debias.Contextual, Knockout: gojev.KnockoutOptions{Method: gojev.ManyBinary, Grouping: "shuffle"}}},
		{batch.RunFile{PromptVersion: contract.GuardedPromptVersion, Debias: debias.PriDe, Permute: 2, AbstainBelow: 0.4,
			Detect: &batch.RunDetect{Threshold: 0.7, Abstain: true}, Knockout: &gojev.KnockoutOptions{Grouping: "file", Seed: 3}},
			gojev.Options{Contract: gojev.Guarded, Debias: debias.PriDe, Permute: 2, AbstainBelow: 0.4, Detect: true, DetectThreshold: 0.7,
				AbstainOnSuspect: true, Knockout: gojev.KnockoutOptions{Grouping: "file", Seed: 3}}},
	} {
		assert.Equal(t, tc.want, tc.meta.Options(), tc.meta.PromptVersion)
	}
}

// rawRecord is a decision record of two options whose first has probability p.
func rawRecord(line int, p float64, label string) string {
	return fmt.Sprintf(`{"id":"r%d","prompt_version":"direct-options-v1","chosen":"o0","chosen_letter":"A","probability":%g,"options":[{"id":"o0","letter":"A","logprob":%g,"probability":%g},{"id":"o1","letter":"B","logprob":%g,"probability":%g}],"label":%q,"backend":"in-process","renderer":"go","template_date":"2026-12-01","ms":5,"stats":{},"line":%d}`,
		line, p, math.Log(p), p, math.Log(1-p), 1-p, label, line) + "\n"
}

// CalibrateFile gives each decision the profile's calibrated probability and abstention, copies
// error records as they are, and writes a run file naming the profile; a profile of another
// model is refused.
func TestCalibrateFile(t *testing.T) {
	model := debias.ModelID{File: "m.gguf", SHA256: "ab"}
	// An overconfident model: it says 0.9 and is right half the time.
	var samples []calibrate.Sample
	for i := range 40 {
		samples = append(samples, calibrate.Sample{Scores: []float64{math.Log(0.9), math.Log(0.1)}, Label: i % 2})
	}
	prof, err := calibrate.New(model, contract.PromptVersion, map[string][]calibrate.Sample{"raw": samples}, 5)
	require.NoError(t, err)
	prof.SHA256 = "cafe"

	dir := t.TempDir()
	in, out := filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "cal.jsonl")
	errRec := `{"id":"bad","line":3,"error":"bad row: missing \"state\""}` + "\n"
	require.NoError(t, os.WriteFile(in, []byte(rawRecord(1, 0.9, "o0")+rawRecord(2, 0.9, "o1")+errRec), 0o644))
	meta := &batch.RunFile{Input: "rows.jsonl", PromptVersion: contract.PromptVersion, Model: &model}
	require.NoError(t, meta.Save(batch.RunFilePath(in)))

	sum, err := batch.ApplyProfile(in, out, prof, "profile.json", 0.8)
	require.NoError(t, err)
	assert.Equal(t, 2, sum.Decided)
	assert.Equal(t, 1, sum.Errors, "the error record, copied")
	assert.Equal(t, 2, sum.Abstained, "calibrated to about 0.5, below 0.8")
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.Len(t, lines, 4)
	assert.Equal(t, errRec, lines[2], "the error record as it was")
	decisions := filepath.Join(dir, "decisions.jsonl")
	require.NoError(t, os.WriteFile(decisions, []byte(lines[0]+lines[1]), 0o644))
	for _, r := range readRecords(t, decisions) {
		require.NotNil(t, r.Calibration)
		assert.Equal(t, "cafe", r.Calibration.ProfileSHA256)
		assert.InDelta(t, 0.9, r.Calibration.UncalibratedProbability, 1e-9)
		assert.InDelta(t, 0.5, r.Probability, 0.15)
		assert.True(t, r.Abstained)
		assert.Equal(t, "o0", r.Chosen, "the choice is kept")
	}
	written, err := batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Equal(t, &batch.RunCalibration{File: "profile.json", SHA256: "cafe"}, written.Calibration)
	assert.Equal(t, 0.8, written.AbstainBelow)
	assert.Equal(t, "rows.jsonl", written.Input, "the input's run file, carried over")

	meta.Model = &debias.ModelID{File: "other.gguf", SHA256: "cd"}
	require.NoError(t, meta.Save(batch.RunFilePath(in)))
	_, err = batch.ApplyProfile(in, filepath.Join(dir, "x.jsonl"), prof, "profile.json", 0)
	var se *batch.SetupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Calibration", se.Field)
	assert.ErrorIs(t, err, calibrate.ErrMismatch)
	assert.NoFileExists(t, filepath.Join(dir, "x.jsonl"))
}

// A run file spells the default bias control "default", and reads it back as debias.Default.
func TestRunFileDefaultDebias(t *testing.T) {
	var m batch.RunFile
	m.SetOptions(gojev.Options{})
	assert.Equal(t, debias.Method("default"), m.Debias)
	assert.Equal(t, debias.Default, m.Options().Debias)
	m.SetOptions(gojev.Options{Debias: debias.None})
	assert.Equal(t, debias.None, m.Options().Debias)
}

// ApplyProfile compares the rows it calibrates with the profile's fitting rows, as Job.Run
// does: rows as sure as the fitting rows are not a shift, rows far less sure are, in the
// Summary and the run file.
func TestCalibrateFileComparesWithTheFittingRows(t *testing.T) {
	model := debias.ModelID{File: "m.gguf", SHA256: "ab"}
	var samples []calibrate.Sample
	for i := range 40 {
		p := []float64{0.85, 0.95}[i%2]
		samples = append(samples, calibrate.Sample{Scores: []float64{math.Log(p), math.Log(1 - p)}, Label: i % 3 % 2})
	}
	prof, err := calibrate.New(model, contract.PromptVersion, map[string][]calibrate.Sample{"raw": samples}, 5)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		ps      []float64
		shifted bool
	}{{"alike", []float64{0.85, 0.95}, false}, {"less sure", []float64{0.55, 0.6}, true}} {
		dir := t.TempDir()
		in, out := filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "cal.jsonl")
		var b strings.Builder
		for i := range 30 {
			b.WriteString(rawRecord(i+1, tc.ps[i%2], "o0"))
		}
		require.NoError(t, os.WriteFile(in, []byte(b.String()), 0o644))
		require.NoError(t, (&batch.RunFile{Input: "rows.jsonl", PromptVersion: contract.PromptVersion, Model: &model,
			Debias: debias.None}).Save(batch.RunFilePath(in)))
		sum, err := batch.ApplyProfile(in, out, prof, "profile.json", 0)
		require.NoError(t, err)
		assert.Equal(t, 30, sum.Served.Rows, tc.name)
		require.NotNil(t, sum.Shift, tc.name)
		assert.Equal(t, tc.shifted, sum.Shift.Shifted, "%s: %+v", tc.name, sum.Shift)
		written, err := batch.ReadRunFile(batch.RunFilePath(out))
		require.NoError(t, err)
		require.NotNil(t, written.Shift, tc.name)
		assert.Equal(t, tc.shifted, written.Shift.Shifted, tc.name)
	}
}
