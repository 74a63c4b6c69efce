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

// settleShortlist spreads each stage's mass by the next stage's reading, as
// Shortlist.Distribution states, recomputed here by hand for five options: the ranker cut e,
// the rerank read a to d and kept b and c, and the final pass read b and c.
func TestSettleShortlistSpreadsEachStage(t *testing.T) {
	sl := &Shortlist{Tau: 0.1, FinalWeight: 0.5, Kept: []string{"b", "c"},
		Scores:   []OptionScore{{"a", 0.2}, {"b", 0.4}, {"c", 0.3}, {"d", 0.1}, {"e", -0.2}},
		Reranked: []RerankedOption{{ID: "a", PYes: 0.1}, {ID: "b", PYes: 0.6}, {ID: "c", PYes: 0.3}, {ID: "d", PYes: 0.05}}}
	res := &Result{Label: "c", Shortlist: sl, Options: []contract.OptionScore{{ID: "b", Letter: "A"}, {ID: "c", Letter: "B"}}}
	final := debias.LogSoftmax([]float64{0, 2}) // the final pass prefers c
	require.NoError(t, res.settleShortlist(final))

	rank := debias.Softmax([]float64{2, 4, 3, 1, -2})
	rerankMass := rank[0] + rank[1] + rank[2] + rank[3]
	yes := 0.1 + 0.6 + 0.3 + 0.05
	keptMass := (0.6 + 0.3) / yes
	logit := func(p float64) float64 { return math.Log(p / (1 - p)) }
	share := debias.Softmax([]float64{logit(0.6) + 0.5*final[0], logit(0.3) + 0.5*final[1]})
	want := []float64{rerankMass * 0.1 / yes, rerankMass * keptMass * share[0], rerankMass * keptMass * share[1], rerankMass * 0.05 / yes, rank[4]}
	var sum float64
	for i, o := range sl.Distribution {
		assert.InDelta(t, want[i], o.Probability, 1e-12, o.ID)
		sum += o.Probability
	}
	assert.InDelta(t, 1, sum, 1e-12)
	assert.InDelta(t, rerankMass, sl.RerankMass, 1e-12)
	assert.InDelta(t, keptMass, sl.KeptMass, 1e-12)
	// b: logit(0.6) + 0.5·log p = 0.405 - 1.063; c: -0.847 - 0.063: b wins on the combined score.
	assert.Equal(t, "b", res.Chosen)
	assert.Equal(t, "A", res.ChosenLetter)
	assert.InDelta(t, want[1], res.Probability, 1e-12)
	require.NotNil(t, res.Correct)
	assert.False(t, *res.Correct)

	sl.Kept = []string{"e", "b"}
	assert.Error(t, res.settleShortlist(final), "a kept option the rerank never read")
}
