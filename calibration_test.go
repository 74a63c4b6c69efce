package gojev_test

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// profileOf is a hand-made profile: one map for one scoring.
func profileOf(scoring string, m calibrate.Map) *calibrate.Profile {
	return &calibrate.Profile{Format: calibrate.Format, PromptVersion: contract.PromptVersion, SHA256: "feed",
		Scorings: map[string]*calibrate.Scoring{scoring: {Choice: calibrate.Choice{Method: m.Method},
			Fitted: &calibrate.Fitted{Method: m.Method, Pooled: m}}}}
}

// TestCalibrationKeepsRawFieldsAndChoices decides rows with and without a calibration profile
// (temperature 0.5) and an abstention threshold: every raw field and every choice is the same,
// Probability is the calibrated probability of the choice, and a row abstains exactly when it
// falls below the threshold.
func TestCalibrationKeepsRawFieldsAndChoices(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 6)
	plain := decideAll(t, openEngine(t, gojev.Options{}), rows)
	probs := make([]float64, len(plain))
	for i, r := range plain {
		lp := positionLogprobs(r)
		for j := range lp {
			lp[j] /= 0.5
		}
		q := debias.Softmax(lp)
		for j, o := range r.Options {
			if o.ID == r.Chosen {
				probs[i] = q[j]
			}
		}
	}
	sorted := append([]float64(nil), probs...)
	sort.Float64s(sorted)
	threshold := (sorted[2] + sorted[3]) / 2 // three rows on each side

	p := profileOf(calibrate.ScoringRaw, calibrate.Map{Method: calibrate.Temperature, T: 0.5, Rows: 100})
	cal := decideAll(t, openEngine(t, gojev.Options{Calibration: p, AbstainBelow: threshold}), rows)
	abstained := 0
	for i, r := range cal {
		want := plain[i]
		assert.Equal(t, want.Options, r.Options, "raw option fields unchanged")
		assert.Equal(t, want.Chosen, r.Chosen)
		assert.Equal(t, want.ChosenLetter, r.ChosenLetter)
		assert.Equal(t, want.PromptSHA256, r.PromptSHA256)
		assert.Equal(t, want.Correct, r.Correct)
		require.NotNil(t, r.Calibration)
		assert.Equal(t, "raw", r.Calibration.Scoring)
		assert.Equal(t, calibrate.Temperature, r.Calibration.Method)
		assert.Equal(t, "feed", r.Calibration.ProfileSHA256)
		assert.Equal(t, want.Probability, r.Calibration.UncalibratedProbability)
		assert.InDelta(t, probs[i], r.Probability, 1e-12)
		assert.Len(t, r.Calibration.Probabilities, len(r.Options))
		assert.Equal(t, r.Probability < threshold, r.Abstained)
		if r.Abstained {
			abstained++
		}
	}
	assert.Equal(t, 3, abstained)
}

func TestCalibrationProfileRefusals(t *testing.T) {
	p := profileOf(calibrate.ScoringPriDe, calibrate.Map{Method: calibrate.Temperature, T: 0.5})
	_, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Calibration: p, Debias: debias.None})
	require.ErrorIs(t, err, calibrate.ErrMismatch, "a raw Decider with a profile of PriDe scores")
	assert.ErrorIs(t, err, gojev.ErrOptions)
	assert.Contains(t, err.Error(), "scored raw")
	d, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Calibration: p})
	require.NoError(t, err, "the default decides under PriDe where a prior is at hand: a PriDe profile serves it")
	d.Close()
	_, err = gojev.Open(context.Background(), modelPath(t), gojev.Options{Calibration: p, Contract: gojev.Binary})
	assert.ErrorIs(t, err, calibrate.ErrMismatch, "a direct-contract profile on the binary contract")
	_, err = gojev.Open(context.Background(), modelPath(t), gojev.Options{AbstainBelow: 1.5})
	assert.ErrorIs(t, err, gojev.ErrOptions)
	_, err = gojev.Open(context.Background(), modelPath(t), gojev.Options{Permute: 2})
	assert.ErrorIs(t, err, gojev.ErrOptions, "Permute without cyclic or PriDe")
}

// TestPermuteNShifts decides rows under 2 of their 8 cyclic shifts, alone and with a PriDe
// prior divided out of each, against the shifted rows decided one by one.
func TestPermuteNShifts(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 2)
	raw := openEngine(t, gojev.Options{})
	prior := []float64{0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05}
	pr := &debias.Prior{Method: debias.PriDe, PromptVersion: contract.PromptVersion,
		ByOptions: map[int]debias.LetterPrior{8: {Letters: debias.Letters(8), Prior: prior}}}
	two := decideAll(t, openEngine(t, gojev.Options{Debias: debias.Cyclic, Permute: 2}), rows)
	pride2 := decideAll(t, openEngine(t, gojev.Options{Debias: debias.PriDe, Prior: pr, Permute: 2}), rows)
	for i, row := range rows {
		var alone, debiased [][]float64
		for _, s := range []int{0, 4} {
			p := row
			p.Options = debias.Permute(row.Options, s)
			r, err := raw.Decide(context.Background(), p)
			require.NoError(t, err)
			lp := positionLogprobs(r)
			alone = append(alone, lp)
			d, _, err := debias.ApplyPrior(lp, prior)
			require.NoError(t, err)
			debiased = append(debiased, d)
		}
		for _, tc := range []struct {
			res    *gojev.Result
			perms  [][]float64
			method debias.Method
		}{{two[i], alone, debias.Cyclic}, {pride2[i], debiased, debias.PriDe}} {
			require.NotNil(t, tc.res.Debias)
			assert.Equal(t, tc.method, tc.res.Debias.Method)
			require.Len(t, tc.res.Debias.Permutations, 1)
			assert.Equal(t, 4, tc.res.Debias.Permutations[0].Shift)
			assert.Equal(t, alone[1], tc.res.Debias.Permutations[0].Logprobs, "the shifted prompt's raw read-out")
			scores, _, err := debias.AverageShifts(tc.perms, []int{0, 4})
			require.NoError(t, err)
			assert.InDeltaSlice(t, scores, tc.res.Debias.Scores, 1e-12)
			assert.Equal(t, tc.res.NPromptTokens+tc.res.Debias.Permutations[0].NPromptTokens, tc.res.Stats.PromptTokens, "both prompts counted")
		}
	}
}
