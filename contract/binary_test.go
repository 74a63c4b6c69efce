package contract_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/contract"
)

// The expected values were computed with Python's math module (float64) from the same logits:
// p_yes = exp(lse(yes)) / (exp(lse(yes)) + exp(lse(no))), logprob = logit - lse(all).
func TestScoreBinary(t *testing.T) {
	logits := []float32{0.5, 2.0, -1.0, 3.0, 1.0, 0.0, -2.0, 4.0}
	tests := []struct {
		name        string
		slots       contract.BinarySlots
		pYes        float64
		yesLP, noLP []float64
	}{
		{"two yes spellings pool", contract.BinarySlots{Yes: []int32{1, 3}, No: []int32{4}}, 0.9099694268296196,
			[]float64{-2.4766884324925496, -1.4766884324925496}, []float64{-3.4766884324925496}},
		{"two no spellings pool", contract.BinarySlots{Yes: []int32{7}, No: []int32{0, 5}}, 0.9537315977210049,
			[]float64{-0.47668843249254955}, []float64{-3.9766884324925496, -4.4766884324925496}},
		{"one each, softmax of two", contract.BinarySlots{Yes: []int32{2}, No: []int32{6}}, 0.7310585786300049,
			[]float64{-5.4766884324925496}, []float64{-6.4766884324925496}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := contract.ScoreBinary(logits, tc.slots)
			assert.InDelta(t, tc.pYes, got.PYes, 1e-12)
			require.Len(t, got.Yes, len(tc.yesLP))
			require.Len(t, got.No, len(tc.noLP))
			for i, s := range got.Yes {
				assert.Equal(t, tc.slots.Yes[i], s.Token)
				assert.Equal(t, float64(logits[s.Token]), *s.Logit)
				assert.InDelta(t, tc.yesLP[i], s.Logprob, 1e-12)
			}
			for i, s := range got.No {
				assert.Equal(t, tc.slots.No[i], s.Token)
				assert.Equal(t, float64(logits[s.Token]), *s.Logit)
				assert.InDelta(t, tc.noLP[i], s.Logprob, 1e-12)
			}
		})
	}
	// Logprob is consistent with ScoreDirect's: logit - LogSumExp over the full row.
	assert.InDelta(t, float64(logits[3])-contract.LogSumExp(logits), contract.ScoreBinary(logits, tests[0].slots).Yes[1].Logprob, 0)
}

func TestScoreBinaryLargeMagnitudes(t *testing.T) {
	logits := []float32{-1000, -1001}
	got := contract.ScoreBinary(logits, contract.BinarySlots{Yes: []int32{0}, No: []int32{1}})
	assert.InDelta(t, 0.7310585786300049, got.PYes, 1e-12, "the seed's softmax test value")
}

func TestRankCandidates(t *testing.T) {
	tests := []struct {
		name   string
		pYes   []float64
		ranks  []int
		chosen int
	}{
		{"highest wins", []float64{0.2, 0.9, 0.5}, []int{3, 1, 2}, 1},
		{"ties keep option order", []float64{0.7, 0.7, 0.1}, []int{1, 2, 3}, 0},
		{"one candidate", []float64{0.01}, []int{1}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cands := make([]contract.CandidateScore, len(tc.pYes))
			for i, p := range tc.pYes {
				cands[i].PYes = p
			}
			assert.Equal(t, tc.chosen, contract.RankCandidates(cands))
			for i, c := range cands {
				assert.Equal(t, tc.ranks[i], c.Rank, "candidate %d", i)
			}
		})
	}
	assert.Equal(t, -1, contract.RankCandidates(nil))
}

func TestVerifyBinaryBoundary(t *testing.T) {
	tok := fixedTokenizer{m: map[string][]int32{
		"yes": {1}, " yes": {2}, "no": {3}, " no": {4},
		"P:": {9, 10}, "P:yes": {9, 10, 1}, "P: yes": {9, 10, 2}, "P:no": {9, 10, 3}, "P: no": {9, 10, 4},
		"Q:": {11}, "Q:yes": {11, 1}, "Q: yes": {12, 2}, "Q:no": {11, 3}, "Q: no": {11, 4},
	}}
	slots, err := contract.ResolveBinarySlots(tok)
	require.NoError(t, err)
	texts, ids := contract.BinarySpellings(tok, slots)
	assert.Equal(t, []string{"yes", " yes", "no", " no"}, texts)
	assert.Equal(t, []int32{1, 2, 3, 4}, ids)

	got, err := contract.VerifyBinaryBoundary(tok, "P:", slots)
	require.NoError(t, err)
	assert.Equal(t, []int32{9, 10}, got)

	_, err = contract.VerifyBinaryBoundary(tok, "Q:", slots)
	assert.ErrorIs(t, err, contract.ErrBoundary)
	assert.Contains(t, err.Error(), `" yes"`)
}

func TestPYesFromLogprobsEqualsScoreBinary(t *testing.T) {
	logits := []float32{1.5, -0.25, 3, 0.75, 2}
	slots := contract.BinarySlots{Yes: []int32{0, 3}, No: []int32{2}}
	want := contract.ScoreBinary(logits, slots).PYes
	lse := contract.LogSumExp(logits)
	got := contract.PYes([]float64{1.5 - lse, 0.75 - lse}, []float64{3 - lse})
	assert.InDelta(t, want, got, 1e-15)
	// Python: a = log(e^1.5 + e^0.75); 1/(1+e^(3-a))
	assert.InDelta(t, 0.24728800769576875, got, 1e-12)
}
