package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
)

// synthetic is n rows of k options whose gold is drawn from softmax(scores/t): the
// temperature t calibrates them.
func synthetic(n, k int, t float64, seed uint64) []Sample {
	rng := rand.New(rand.NewPCG(seed, 7))
	out := make([]Sample, n)
	for i := range out {
		s := make([]float64, k)
		for j := range s {
			s[j] = rng.NormFloat64() * 2
		}
		p := softmax(s, t)
		u, g := rng.Float64(), 0
		for acc := p[0]; acc < u && g < k-1; acc += p[g] {
			g++
		}
		out[i] = Sample{Scores: s, Label: g}
	}
	return out
}

// A shrunk temperature is the maximum-likelihood one when rows are many, and stays near its
// prior's center when they are few (a plain fit of 10 rows swings far).
func TestFitShrunk(t *testing.T) {
	many := synthetic(3000, 8, 0.4, 1)
	mle, err := Fit(Temperature, many)
	require.NoError(t, err)
	shrunk, err := FitShrunk(many, 2, 1)
	require.NoError(t, err)
	assert.InDelta(t, 0.4, mle.T, 0.04, "the plain fit finds the generating temperature")
	assert.InDelta(t, mle.T, shrunk.T, 0.01, "3,000 rows outweigh the prior")
	assert.Equal(t, &Shrink{T0: 2, SD: 1}, shrunk.Shrink)

	few := synthetic(10, 8, 0.4, 2)
	mle, err = Fit(Temperature, few)
	require.NoError(t, err)
	shrunk, err = FitShrunk(few, 0.6, 0.5)
	require.NoError(t, err)
	lo, hi := math.Min(mle.T, 0.6), math.Max(mle.T, 0.6)
	assert.True(t, shrunk.T >= lo-1e-6 && shrunk.T <= hi+1e-6, "between the plain fit %g and the prior's center 0.6: %g", mle.T, shrunk.T)
	tight, err := FitShrunk(few, 0.6, 0.01)
	require.NoError(t, err)
	assert.InDelta(t, 0.6, tight.T, 0.01, "a tight prior holds the temperature at its center")

	binary := []Sample{{Scores: []float64{0.9}, Label: 0, Binary: true}, {Scores: []float64{0.8}, Label: 1, Binary: true}, {Scores: []float64{0.2}, Label: 1, Binary: true}}
	b, err := FitShrunk(binary, 1, 1)
	require.NoError(t, err)
	assert.True(t, b.Binary)
	assert.Positive(t, b.T)

	_, err = FitShrunk(few[:1], 1, 1)
	assert.ErrorIs(t, err, ErrNoRows)
	_, err = FitShrunk(few, 0, 1)
	assert.ErrorIs(t, err, ErrMethod)
}

// NewWith calibrates a scoring of few rows by a shrunk temperature, one of many as New does,
// leaves out one of too few, and certifies each: the bound is at least the cross-validated ECE.
func TestNewWithFewRows(t *testing.T) {
	samples := map[string][]Sample{"pride": synthetic(40, 8, 0.4, 3), "raw": synthetic(300, 8, 0.4, 4), "cyclic": synthetic(5, 8, 1, 5)}
	p, err := NewWith(debias.ModelID{}, "direct-options-v1", samples, Config{ShrinkToward: map[string]float64{"pride": 0.6}})
	require.NoError(t, err)
	assert.Equal(t, []string{"pride", "raw"}, p.Names())
	require.Len(t, p.Skipped, 1)
	assert.Contains(t, p.Skipped[0], "cyclic (5 rows")

	few := p.Scorings["pride"]
	assert.Equal(t, Temperature, few.Method)
	require.NotNil(t, few.Fitted.Pooled.Shrink)
	assert.Equal(t, 0.6, few.Fitted.Pooled.Shrink.T0)
	assert.Contains(t, few.Reason, "shrunk toward 0.6")
	assert.Len(t, few.Points, 40)
	cv, ok := few.CV[Temperature]
	require.True(t, ok, "the shrunk temperature's cross-validated figures, as a chosen method's")
	assert.Equal(t, few.Before.Accuracy, cv.Accuracy, "a temperature moves no choice")
	assert.Less(t, cv.ECE, few.Before.ECE)
	assert.InDelta(t, few.Certified.ECE, cv.ECE, 1e-12, "one cross-validation")
	for name, sc := range p.Scorings {
		require.NotNil(t, sc.Certified, name)
		assert.Equal(t, 0.9, sc.Certified.Confidence)
		assert.GreaterOrEqual(t, sc.Certified.Bound, sc.Certified.ECE, "%s: the bound is an upper quantile", name)
		assert.Less(t, sc.Certified.Bound, 0.5, name)
	}
	assert.Greater(t, few.Certified.Bound-few.Certified.ECE, p.Scorings["raw"].Certified.Bound-p.Scorings["raw"].Certified.ECE,
		"40 rows certify a wider margin than 300")
	assert.Nil(t, p.Scorings["raw"].Fitted.Pooled.Shrink, "300 rows: a method chosen by cross-validation")

	_, err = NewWith(debias.ModelID{}, "direct-options-v1", map[string][]Sample{"pride": synthetic(3, 8, 1, 6)}, Config{})
	assert.ErrorIs(t, err, ErrNoRows)
}

// The temperature a few rows are shrunk toward: the shipped band's for the default model (its
// 2-4 band's T, calibrating only those counts), none for a model gojev ships nothing for.
func TestShippedTemperature(t *testing.T) {
	p := shippedProfiles()[0]
	got, ok := ShippedTemperature(p.Model.SHA256, p.PromptVersion, "pride")
	require.True(t, ok)
	assert.InDelta(t, p.Scorings["pride"].Fitted.ByOptions[3].T, got, 0.05)
	assert.InDelta(t, 0.605, got, 0.01)
	_, ok = ShippedTemperature("feed", p.PromptVersion, "pride")
	assert.False(t, ok)
	_, ok = ShippedTemperature(p.Model.SHA256, p.PromptVersion, "cyclic")
	assert.False(t, ok)
}
