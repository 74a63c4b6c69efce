package calibrate

import (
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// draw returns n decisions of 4 options whose top probability is about top, chosen at
// letters drawn from pos.
func draw(rng *rand.Rand, n int, top float64, pos []float64) RowStats {
	var s RowStats
	for range n {
		t := min(0.97, max(0.3, top+0.1*rng.NormFloat64()))
		c, u := 0, rng.Float64()
		for acc := pos[0]; u > acc && c < len(pos)-1; acc += pos[c] {
			c++
		}
		probs := []float64{(1 - t) / 3, (1 - t) / 3, (1 - t) / 3, (1 - t) / 3}
		probs[c] = t
		s.Add(probs, c)
	}
	return s
}

// Compare: rows drawn like the fitting rows are not shifted (over 200 trials, none is at these
// strict thresholds); more confident rows, or rows choosing other letters, are, and say why;
// too few rows test nothing. RowStats survive their JSON.
func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	even := []float64{0.25, 0.25, 0.25, 0.25}
	fit := draw(rng, 300, 0.55, even)
	for range 200 {
		assert.False(t, Compare(fit, draw(rng, 150, 0.55, even)).Shifted)
	}
	sh := Compare(fit, draw(rng, 150, 0.75, even))
	assert.True(t, sh.Shifted)
	assert.Greater(t, sh.TopZ, ShiftZ)
	assert.Contains(t, sh.Why, "mean probability of the choice")
	sh = Compare(fit, draw(rng, 150, 0.55, []float64{0.7, 0.1, 0.1, 0.1}))
	assert.True(t, sh.Shifted)
	assert.Less(t, sh.LettersP, ShiftP)
	assert.Contains(t, sh.Why, "chosen letters")
	assert.False(t, Compare(fit, draw(rng, MinShiftRows-1, 0.9, even)).Shifted, "too few rows")

	// Rows of another option count: a shift however few, and however alike their statistics.
	var five, mixed RowStats
	for i := range 3 {
		five.Add([]float64{0.55, 0.1, 0.1, 0.15, 0.1}, i%2)
		mixed.Add([]float64{0.55, 0.15, 0.15, 0.15}, i%2)
	}
	mixed.Add([]float64{0.55, 0.45}, 0)
	sh = Compare(fit, five)
	assert.True(t, sh.Shifted)
	assert.True(t, sh.OptionsDiffer)
	assert.Equal(t, "these rows have 5 options, the fitting rows all 4", sh.Why)
	sh = Compare(fit, mixed)
	assert.True(t, sh.OptionsDiffer)
	assert.Equal(t, "these rows have several option counts, the fitting rows all 4 options", sh.Why)
	var mixedFit RowStats
	mixedFit.Add([]float64{0.5, 0.5}, 0)
	mixedFit.Add([]float64{0.4, 0.3, 0.3}, 0)
	assert.False(t, Compare(mixedFit, five).OptionsDiffer, "fitting rows of several counts: no count to keep to")

	b, err := json.Marshal(fit)
	require.NoError(t, err)
	var back RowStats
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, fit.Rows, back.Rows)
	assert.InDelta(t, fit.TopMean, back.TopMean, 1e-12)
	assert.InDelta(t, fit.EntropySD, back.EntropySD, 1e-12)
	back.Add([]float64{0.5, 0.5}, 0)
	assert.Equal(t, fit.Rows+1, back.Rows, "a read RowStats goes on counting")
}
