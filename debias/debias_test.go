package debias_test

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
)

// observe builds what a model with letter prior pi and content strengths c gives under every
// cyclic shift, PriDe's model of selection bias: P_s(position i) ∝ pi_i · c_{(i+s) mod k},
// returned as log-probabilities over the positions.
func observe(pi, c []float64) [][]float64 {
	k := len(pi)
	perms := make([][]float64, k)
	for s := range k {
		x := make([]float64, k)
		for i, o := range debias.CyclicOrder(k, s) {
			x[i] = math.Log(pi[i]) + math.Log(c[o])
		}
		perms[s] = debias.LogSoftmax(x)
	}
	return perms
}

func normalised(v []float64) []float64 {
	total := 0.0
	for _, x := range v {
		total += x
	}
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x / total
	}
	return out
}

func TestPriDeRecoversAKnownPrior(t *testing.T) {
	pi := normalised([]float64{0.05, 0.40, 0.10, 0.08, 0.12, 0.07, 0.10, 0.08}) // strong B bias
	rows := [][]float64{
		{1, 2, 3, 4, 5, 6, 7, 8},
		{9, 1, 1, 1, 1, 1, 1, 1},
		{0.5, 0.5, 4, 0.5, 0.5, 0.5, 0.5, 0.1},
	}
	var priors [][]float64
	for _, c := range rows {
		prior, err := debias.EstimateRowPrior(observe(pi, c))
		require.NoError(t, err)
		assert.InDeltaSlice(t, pi, prior, 1e-12, "each row alone recovers the prior")
		priors = append(priors, prior)
	}
	avg, err := debias.AveragePriors(priors)
	require.NoError(t, err)
	assert.InDeltaSlice(t, pi, avg, 1e-12)

	// One decode of the row in its own order, debiased with the prior: the content alone.
	for _, c := range rows {
		identity := observe(pi, c)[0]
		scores, probs, err := debias.ApplyPrior(identity, avg)
		require.NoError(t, err)
		assert.InDeltaSlice(t, normalised(c), probs, 1e-12)
		assert.InDelta(t, 1.0, sum(probs), 1e-12)
		for i := range scores {
			assert.InDelta(t, math.Log(probs[i]), scores[i], 1e-12)
		}
	}
}

func TestPriDeChangesTheChoiceABiasMade(t *testing.T) {
	// The model puts B first on a row whose content favours D: raw argmax B, debiased D.
	pi := normalised([]float64{0.1, 0.6, 0.1, 0.1, 0.1})
	c := []float64{1, 1, 1, 2, 1}
	identity := observe(pi, c)[0]
	assert.Equal(t, 1, argmax(identity))
	_, probs, err := debias.ApplyPrior(identity, pi)
	require.NoError(t, err)
	assert.Equal(t, 3, argmax(probs))
}

func TestAverageCyclicMapsPositionsBackToOptions(t *testing.T) {
	pi := normalised([]float64{0.5, 0.2, 0.2, 0.1})
	c := []float64{1, 3, 2, 4} // option 3 is the best in the row's own order
	scores, probs, err := debias.AverageCyclic(observe(pi, c))
	require.NoError(t, err)
	assert.InDeltaSlice(t, normalised(c), probs, 1e-12, "the prior cancels over the k shifts")
	assert.Equal(t, 3, argmax(scores))

	// A hand-made table: option o scores 10·o at every position, so the average is by option.
	perms := [][]float64{{0, 10, 20}, {10, 20, 0}, {20, 0, 10}}
	scores, _, err = debias.AverageCyclic(perms)
	require.NoError(t, err)
	assert.InDelta(t, 10, scores[1]-scores[0], 1e-12)
	assert.InDelta(t, 10, scores[2]-scores[1], 1e-12)
}

func TestCyclicOrderAndPermute(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2}, debias.CyclicOrder(3, 0))
	assert.Equal(t, []int{2, 0, 1}, debias.CyclicOrder(3, 2))
	opts := []string{"billing", "technical", "account", "sales"}
	assert.Equal(t, []string{"technical", "account", "sales", "billing"}, debias.Permute(opts, 1))
	assert.Equal(t, []string{"sales", "billing", "technical", "account"}, debias.Permute(opts, 3))
	// Each option takes each position exactly once over the k shifts.
	for o := range opts {
		seen := map[int]bool{}
		for s := range len(opts) {
			for pos, got := range debias.CyclicOrder(len(opts), s) {
				if got == o {
					seen[pos] = true
				}
			}
		}
		assert.Len(t, seen, len(opts))
	}
	assert.Panics(t, func() { debias.CyclicOrder(3, 3) })
}

func TestShapeErrors(t *testing.T) {
	_, err := debias.EstimateRowPrior([][]float64{{0, 0}, {0}})
	assert.ErrorIs(t, err, debias.ErrShape)
	_, _, err = debias.ApplyPrior([]float64{0, 0}, []float64{1})
	assert.ErrorIs(t, err, debias.ErrShape)
	_, err = debias.AveragePriors(nil)
	assert.ErrorIs(t, err, debias.ErrShape)
	_, _, err = debias.AverageCyclic([][]float64{{0, 0, 0}})
	assert.ErrorIs(t, err, debias.ErrShape)
}

func TestCalibrate(t *testing.T) {
	// A model that says yes with 0.8 to content-free evidence: 0.8 means "no information".
	q, ok := debias.Calibrate(0.8, []float64{0.7, 0.9, 0.8})
	require.True(t, ok)
	assert.InDelta(t, 0.5, q, 1e-12)
	q, _ = debias.Calibrate(0.9, []float64{0.8})
	assert.InDelta(t, (0.9/0.8)/(0.9/0.8+0.1/0.2), q, 1e-12)
	assert.Greater(t, q, 0.5)
	q, _ = debias.Calibrate(0.6, []float64{0.8})
	assert.Less(t, q, 0.5, "below the content-free yes rate is evidence for no")
	_, ok = debias.Calibrate(0.6, []float64{1})
	assert.False(t, ok)
}

func TestSampleIndices(t *testing.T) {
	assert.Equal(t, []int{10, 30, 50, 70, 90, 110, 130, 150, 170, 190}, debias.SampleIndices(200, 0.05, 10))
	assert.Len(t, debias.SampleIndices(1000, 0.05, 10), 50)
	assert.Equal(t, []int{0, 1, 2}, debias.SampleIndices(3, 0.05, 10))
	assert.Nil(t, debias.SampleIndices(0, 0.05, 10))
}

func TestPriorFileRoundTrip(t *testing.T) {
	p := &debias.Prior{Method: debias.PriDe, Reference: debias.Reference, PromptVersion: "direct-options-v1",
		Model:     debias.ModelID{File: "m.gguf", SHA256: "ab"},
		ByOptions: map[int]debias.LetterPrior{3: {Letters: "ABC", Prior: []float64{0.5, 0.25, 0.25}, SampleRows: 10}}}
	path := filepath.Join(t.TempDir(), "prior.json")
	require.NoError(t, p.Save(path))
	got, err := debias.LoadPrior(path)
	require.NoError(t, err)
	assert.Equal(t, p, got)
	pr, ok := got.For(3)
	assert.True(t, ok)
	assert.Equal(t, []float64{0.5, 0.25, 0.25}, pr)
	_, ok = got.For(4)
	assert.False(t, ok)

	assert.NoError(t, got.Check(debias.ModelID{SHA256: "ab"}, "direct-options-v1"))
	assert.ErrorIs(t, got.Check(debias.ModelID{SHA256: "cd"}, "direct-options-v1"), debias.ErrPriorMismatch)
	assert.ErrorIs(t, got.Check(debias.ModelID{SHA256: "ab"}, "binary-candidates-v1"), debias.ErrPriorMismatch)

	for _, bad := range []string{
		`{"method": "pride", "priors": {"3": {"prior": [0.5, 0.5]}}}`,
		`{"method": "pride", "priors": {"2": {"prior": [0.9, 0.5]}}}`,
		`{"method": "cyclic", "priors": {"2": {"prior": [0.5, 0.5]}}}`,
		`{"method": "pride", "priors": {}}`,
		`not json`,
	} {
		_, err := debias.ReadPrior(bytes.NewReader([]byte(bad)))
		assert.True(t, errors.Is(err, debias.ErrPriorFile), "%s: %v", bad, err)
	}
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func TestShiftsAndAverageShifts(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, debias.Shifts(8, 0))
	assert.Equal(t, []int{0, 4}, debias.Shifts(8, 2))
	assert.Equal(t, []int{0, 2, 4, 6}, debias.Shifts(8, 4))
	assert.Equal(t, []int{0, 1, 3}, debias.Shifts(5, 3))
	assert.Equal(t, []int{0, 1, 2}, debias.Shifts(3, 9))

	// Two shifts of 4 options: under shift 2, position i shows option (i+2) mod 4.
	perms := [][]float64{
		{math.Log(0.4), math.Log(0.3), math.Log(0.2), math.Log(0.1)},
		{math.Log(0.1), math.Log(0.2), math.Log(0.3), math.Log(0.4)},
	}
	scores, probs, err := debias.AverageShifts(perms, []int{0, 2})
	require.NoError(t, err)
	// Option 0: positions 0 (0.4) and 2 (0.3); option 1: 0.3, 0.4; option 2: 0.2, 0.1; option 3: 0.1, 0.2.
	want := debias.LogSoftmax([]float64{
		(math.Log(0.4) + math.Log(0.3)) / 2, (math.Log(0.3) + math.Log(0.4)) / 2,
		(math.Log(0.2) + math.Log(0.1)) / 2, (math.Log(0.1) + math.Log(0.2)) / 2})
	assert.InDeltaSlice(t, want, scores, 1e-12)
	assert.InDelta(t, 1, probs[0]+probs[1]+probs[2]+probs[3], 1e-12)
	_, _, err = debias.AverageShifts(perms, []int{0, 4})
	assert.ErrorIs(t, err, debias.ErrShape)
}

func TestPriorString(t *testing.T) {
	p := &debias.Prior{Method: debias.PriDe, ByOptions: map[int]debias.LetterPrior{
		4: {Letters: "ABCD", Prior: []float64{0.4, 0.3, 0.2, 0.1}, SampleRows: 10},
		2: {Letters: "AB", Prior: []float64{0.75, 0.25}, SampleRows: 12},
	}}
	assert.Equal(t, "2 options (12 rows): A 0.750 B 0.250; 4 options (10 rows): A 0.400 B 0.300 C 0.200 D 0.100", p.String())
}
