package gojev

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// topK keeps the k best scores in row order; ties go to the earlier option.
func TestTopK(t *testing.T) {
	assert.Equal(t, []int{1, 3, 4}, topK([]float64{0.1, 0.9, 0.2, 0.5, 0.5, 0.3}, 3))
	assert.Equal(t, []int{0, 1}, topK([]float64{1, 1, 1}, 2))
	assert.Equal(t, []int{0, 1}, topK([]float64{2, 1}, 5))
}

// rankScores centres the state and the options by the options' mean before the cosine: two
// options at (1, 1) and (1, -1) centre to (0, 1) and (0, -1), and a state at (2, 0.5) to
// (1, 0.5), whose cosines with them are ±0.5/√1.25.
func TestRankScoresCentreByTheOptions(t *testing.T) {
	got := rankScores([]float32{2, 0.5}, [][]float32{{1, 1}, {1, -1}})
	c := 0.5 / math.Sqrt(1.25)
	assert.InDeltaSlice(t, []float64{c, -c}, got, 1e-12)
}

// settleShortlist gives the ranker's cut options their share of softmax(score/τ) and the kept
// options the rest by softmax(score/τ + κ·logit(p_yes)) (ShortlistRule), recomputed here by hand
// for five options of which three were kept; the choice is that product's argmax: "d", which the
// ranker puts above "b", though "b" has the higher p_yes.
func TestSettleShortlistSpreadsTheRankersMass(t *testing.T) {
	sl := &Shortlist{Tau: 0.1, Kappa: 2, Kept: []string{"a", "b", "d"},
		Scores: []OptionScore{{"a", 0.2}, {"b", 0.3}, {"c", 0.1}, {"d", 0.4}, {"e", -0.2}}}
	res := &Result{Label: "d", Shortlist: sl, Candidates: []contract.CandidateScore{
		{ID: "a", BinaryScore: contract.BinaryScore{PYes: 0.1}},
		{ID: "b", BinaryScore: contract.BinaryScore{PYes: 0.6}},
		{ID: "d", BinaryScore: contract.BinaryScore{PYes: 0.55}}}}
	require.NoError(t, res.settleShortlist())

	rank := debias.Softmax([]float64{2, 3, 1, 4, -2})
	mass := rank[0] + rank[1] + rank[3]
	logit := func(p float64) float64 { return math.Log(p / (1 - p)) }
	share := debias.Softmax([]float64{2 + 2*logit(0.1), 3 + 2*logit(0.6), 4 + 2*logit(0.55)})
	want := []float64{mass * share[0], mass * share[1], rank[2], mass * share[2], rank[4]}
	var sum float64
	for i, o := range sl.Distribution {
		assert.InDelta(t, want[i], o.Probability, 1e-12, o.ID)
		sum += o.Probability
	}
	assert.InDelta(t, 1, sum, 1e-12)
	assert.InDelta(t, mass, sl.KeptMass, 1e-12)
	assert.Equal(t, "d", res.Chosen, "the product's argmax, not the highest p_yes")
	assert.InDelta(t, want[3], res.Probability, 1e-12)
	require.NotNil(t, res.Correct)
	assert.True(t, *res.Correct)

	sl.Kept = []string{"a", "c", "d"}
	assert.Error(t, res.settleShortlist(), "the candidates are not the kept options")
}
