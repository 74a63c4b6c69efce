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

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/testenv"
)

// TestCalibrateThenDecideCalibrated is the calibration flow on the small model: decide the 12
// example tickets, fit a profile from that results file (no decoding), decide again with
// --calibration and --abstain-below: every raw field and choice is the first run's, probability
// is the profile's map of the same scores, rows below the threshold abstain, and jev report
// shows the calibrated and uncalibrated runs side by side. Then the refusals: a profile of
// another scoring, of another model, --max-error without a profile, and a budget no threshold
// meets.
func TestCalibrateThenDecideCalibrated(t *testing.T) {
	dir := t.TempDir()
	rows := filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl")
	raw := filepath.Join(dir, "raw.jsonl")
	code, _, stderr := jev(t, "", withModel(t, "decide", "-i", rows, "-o", raw, "-q")...)
	require.Equal(t, 0, code, stderr)

	prof := filepath.Join(dir, "profile.json")
	code, stdout, stderr := jev(t, "", "calibrate", raw, "-o", prof, "--folds", "3")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "scoring raw: 12 labelled fitting rows")
	assert.Contains(t, stdout, "← chosen")
	assert.Contains(t, stderr, "profile written to "+prof)
	assert.NotContains(t, stderr, "no run file", "jev decide wrote the run file")
	p, err := calibrate.Load(prof)
	require.NoError(t, err)
	require.Contains(t, p.Scorings, "raw")
	assert.Len(t, p.Scorings["raw"].Points, 12)
	assert.Equal(t, "direct-options-v1", p.PromptVersion)
	assert.Len(t, p.Model.SHA256, 64)
	require.Len(t, p.Sources, 1)
	assert.Equal(t, 12, p.Sources[0].Rows)

	cal := filepath.Join(dir, "cal.jsonl")
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", cal, "--calibration", prof, "--abstain-below", "0.5")...)
	require.Equal(t, 0, code, stderr)
	before, after := readResults(t, raw), readResults(t, cal)
	abstained := 0
	for _, r := range after {
		if r.Abstained {
			abstained++
		}
	}
	// "decided" counts every decision; "answered" the ones not abstained.
	assert.Contains(t, stderr, "rows 12, decided 12, errors 0")
	assert.Contains(t, stderr, fmt.Sprintf("abstained %d, answered %d: coverage %.1f%%", abstained, 12-abstained, 100*float64(12-abstained)/12))
	if abstained < 12 {
		assert.Contains(t, stderr, "accuracy of the answered rows")
	}
	require.Len(t, after, 12)
	for i, r := range after {
		b := before[i]
		assert.Equal(t, b.Options, r.Options, "raw fields unchanged")
		assert.Equal(t, b.Chosen, r.Chosen, "choice unchanged")
		assert.Equal(t, b.PromptSHA256, r.PromptSHA256)
		require.NotNil(t, r.Calibration)
		assert.Equal(t, b.Probability, r.Calibration.UncalibratedProbability)
		assert.Equal(t, p.SHA256, r.Calibration.ProfileSHA256)
		assert.Equal(t, p.Scorings["raw"].Method, r.Calibration.Method)
		scores := make([]float64, len(b.Options))
		for j, o := range b.Options {
			scores[j] = o.Logprob
		}
		want := p.Scorings["raw"].Fitted.Apply(scores)
		assert.InDeltaSlice(t, want, r.Calibration.Probabilities, 1e-9)
		assert.Equal(t, r.Probability < 0.5, r.Abstained)
	}
	var meta batch.RunFile
	b, err := os.ReadFile(cal + ".run.json")
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &meta))
	require.NotNil(t, meta.Calibration)
	assert.Equal(t, p.SHA256, meta.Calibration.SHA256)
	assert.Equal(t, 0.5, meta.AbstainBelow)

	// --apply calibrates the first run's file offline: the same records as deciding with the
	// profile, except the timing.
	applied := filepath.Join(dir, "applied.jsonl")
	code, _, stderr = jev(t, "", "calibrate", "--apply", prof, raw, "-o", applied, "--abstain-below", "0.5")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "12 decisions of "+raw+" calibrated")
	for i, r := range readResults(t, applied) {
		want := after[i]
		assert.Equal(t, want.Probability, r.Probability)
		assert.Equal(t, want.Calibration, r.Calibration)
		assert.Equal(t, want.Abstained, r.Abstained)
		assert.Equal(t, want.Options, r.Options)
	}
	b, err = os.ReadFile(applied + ".run.json")
	require.NoError(t, err)
	assert.Contains(t, string(b), p.SHA256, "the run file names the profile")

	// The text format marks the probability as the profile's.
	code, stdout, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-q", "--format", "text", "--calibration", prof)...)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 12)
	assert.Regexp(t, fmt.Sprintf(`^t01\s+\S+\s+p_cal=%.3f \([A-E]\)`, after[0].Probability), lines[0])

	code, stdout, stderr = jev(t, "", "report", cal)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "cal (uncalibrated)")
	assert.Contains(t, stdout, "AURC")

	// Refusals, each before the model is loaded or right after.
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"another scoring", []string{"--calibration", prof, "--debias", "pride"}, "it holds raw, and these decisions are scored pride"},
		{"max-error without a profile", []string{"--max-error", "0.1"}, "give --calibration FILE"},
		{"max-error 0", []string{"--calibration", prof, "--max-error", "0"}, "want an error rate in (0, 1)"},
		{"both thresholds", []string{"--calibration", prof, "--max-error", "0.1", "--abstain-below", "0.5"}, "give one of them"},
		{"an impossible budget", []string{"--calibration", prof, "--max-error", "0.001"}, "no threshold meets the error budget"},
		{"the binary contract", []string{"--calibration", prof, "--contract", "binary"}, "fitted on direct-options-v1 decisions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := jev(t, "", withModel(t, "decide", append([]string{"-i", rows, "-q"}, tc.args...)...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}
	// --permute N reaches the Decider, alone and with PriDe (a prior file read back), and the
	// run file records it.
	prior := filepath.Join(dir, "prior.json")
	for _, args := range [][]string{{"--permute", "2"}, {"--debias", "pride", "--prior", prior, "--permute", "2"}} {
		perm := filepath.Join(dir, "permute.jsonl")
		code, _, stderr = jev(t, "", withModel(t, "decide", append([]string{"-i", rows, "-o", perm, "-q"}, args...)...)...)
		require.Equal(t, 0, code, stderr)
		for _, r := range readResults(t, perm) {
			require.NotNil(t, r.Debias, "%v", args)
			if r.Debias.PriorSample {
				continue // a PriDe estimation row: all k shifts
			}
			require.Len(t, r.Debias.Permutations, 1, "%v", args)
			assert.Equal(t, len(r.Options)/2, r.Debias.Permutations[0].Shift, "%v", args)
		}
		b, err := os.ReadFile(perm + ".run.json")
		require.NoError(t, err)
		assert.Contains(t, string(b), `"permute": 2`)
	}

	other := filepath.Join(dir, "other.json")
	b, err = os.ReadFile(prof)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(other, []byte(strings.Replace(string(b), p.Model.SHA256, strings.Repeat("0", 64), 1)), 0o644))
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-q", "--calibration", other)...)
	assert.Equal(t, 2, code, stderr)
	assert.Contains(t, stderr, "fitted for another model")

	// A results file copied without its run file: the profile records no model, and both the
	// fit and every use say so (a new user unpacked a kept results file alone).
	bare, bareProf := filepath.Join(dir, "bare.jsonl"), filepath.Join(dir, "bare-profile.json")
	b, err = os.ReadFile(raw)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bare, b, 0o644))
	code, _, stderr = jev(t, "", "calibrate", bare, "-o", bareProf, "--folds", "3")
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, bare+" has no run file beside it")
	bp, err := calibrate.Load(bareProf)
	require.NoError(t, err)
	assert.Empty(t, bp.Model.SHA256)
	code, _, stderr = jev(t, "", "calibrate", "--apply", bareProf, raw, "-o", filepath.Join(dir, "bare-applied.jsonl"))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "records no model")
	code, _, stderr = jev(t, "", "calibrate", "--apply", prof, raw, "-o", filepath.Join(dir, "applied-again.jsonl"))
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "records no model", "a profile with its model")
}
