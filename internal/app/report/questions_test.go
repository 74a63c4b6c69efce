package report

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/batch"
)

// typedRecord reads an answers record as a results file holds it.
func typedRecord(t *testing.T, line string) *batch.AnswersRecord {
	t.Helper()
	var r batch.AnswersRecord
	require.NoError(t, json.Unmarshal([]byte(line), &r))
	return &r
}

// The typed questions' figures, worked by hand: a noul's AUROC, Brier and accuracy at 0.5, a
// score's MAE against the median's and Spearman's ρ, a choice's accuracy against the majority.
func TestQuestionMetrics(t *testing.T) {
	var recs []*batch.AnswersRecord
	nouls := []struct {
		p     string
		label bool
	}{{"0.9", true}, {"0.8", true}, {"0.3", false}, {"0.6", false}}
	scores := []struct{ score, p0, p1, p2, label string }{
		{"0.2", "0.8", "0.2", "0.0", "0"}, {"1.1", "0.1", "0.7", "0.2", "1"}, {"1.9", "0.0", "0.1", "0.9", "2"}, {"1.0", "0.2", "0.6", "0.2", "2"}}
	for i := range 4 {
		n, s := nouls[i], scores[i]
		choice, label := "a", "a"
		if i == 3 {
			label = "b"
		}
		recs = append(recs, typedRecord(t, `{"id": "r", "line": 1, "model": "m", "usage": {"input_tokens": 1, "output_tokens": 1}, "answers": {`+
			`"n": {"type": "noul", "noul": `+n.p+`, "label": `+map[bool]string{true: "true", false: "false"}[n.label]+`}, `+
			`"s": {"type": "score", "score": `+s.score+`, "confidence": 0.5, "legend": {"0": "x", "1": "y", "2": "z"}, "probabilities": {"0": `+s.p0+`, "1": `+s.p1+`, "2": `+s.p2+`}, "label": `+s.label+`}, `+
			`"c": {"type": "choice", "choice": "`+choice+`", "confidence": 0.6, "probabilities": {"a": 0.8, "b": 0.2}, "label": "`+label+`"}, `+
			`"u": {"type": "noul", "noul": 0.5}}}`))
	}
	ms := questionMetrics(recs)
	require.Len(t, ms, 4)
	n, s, c, u := ms[0], ms[1], ms[2], ms[3]
	assert.Equal(t, "noul", n.Type)
	assert.Equal(t, 4, n.Labelled)
	require.NotNil(t, n.AUROC)
	assert.InDelta(t, 1.0, *n.AUROC, 1e-12, "every positive above every negative")
	assert.InDelta(t, (0.01+0.04+0.09+0.36)/4, n.Brier, 1e-12)
	assert.InDelta(t, 0.75, n.Accuracy, 1e-12)
	assert.InDelta(t, 0.5, n.BaseRate, 1e-12)

	assert.Equal(t, "score", s.Type)
	assert.InDelta(t, (0.2+0.1+0.1+1.0)/4, s.MAE, 1e-12)
	assert.InDelta(t, (1.5+0.5+0.5+0.5)/4, s.BaselineMAE, 1e-12, "the labels' median is 1.5: |1.5 - l|")
	assert.InDelta(t, 0.75, s.Exact, 1e-12, "the most probable level is the label on three rows")
	// ranks of the scores 1 3 4 2, of the labels 1 2 3.5 3.5: Σ dev products 3, Σ squares 5 and 4.5
	assert.InDelta(t, 3/math.Sqrt(5*4.5), s.Spearman, 1e-12)

	assert.InDelta(t, 0.75, c.Accuracy, 1e-12)
	assert.InDelta(t, 0.75, c.BaselineAccuracy, 1e-12)
	assert.Zero(t, u.Labelled)

	var b strings.Builder
	writeQuestions(&b, []RunReport{{Name: "typed", Questions: ms}})
	assert.Contains(t, b.String(), "AUROC 1.000 (0.5)")
	assert.Contains(t, b.String(), "no labels")
}

// Spearman's ρ is Pearson's correlation of ranks, ties at their mean rank.
func TestSpearman(t *testing.T) {
	assert.InDelta(t, 1.0, spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}), 1e-12)
	assert.InDelta(t, -1.0, spearman([]float64{1, 2, 3, 4}, []float64{4, 3, 2, 1}), 1e-12)
	assert.Equal(t, []float64{1, 2.5, 2.5, 4}, ranks([]float64{1, 5, 5, 9}))
	assert.Zero(t, spearman([]float64{1, 1, 1}, []float64{1, 2, 3}), "a constant sample")
}
