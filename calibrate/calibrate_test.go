package calibrate

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
)

// sampleCalibrated draws n decisions of k options from a calibrated model: true logits z with
// standard deviation spread, the label drawn from softmax(z), and the scores a miscalibrated
// model reports, z·t (so temperature t undoes it).
func sampleCalibrated(rng *rand.Rand, n, k int, spread, t float64) []Sample {
	out := make([]Sample, n)
	for i := range out {
		z := make([]float64, k)
		for j := range z {
			z[j] = rng.NormFloat64() * spread
		}
		p := softmax(z, 1)
		u, label := rng.Float64(), k-1
		for j, acc := 0, 0.0; j < k; j++ {
			if acc += p[j]; u < acc {
				label = j
				break
			}
		}
		s := make([]float64, k)
		for j := range z {
			s[j] = z[j] * t
		}
		out[i] = Sample{Scores: logSoftmax(s, 1), Label: label}
	}
	return out
}

func TestTemperatureRecoversAKnownT(t *testing.T) {
	for _, tc := range []struct {
		name string
		k    int
		t    float64
	}{
		{"underconfident, 8 options", 8, 0.35},
		{"overconfident, 4 options", 4, 2.5},
		{"calibrated, 16 options", 16, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tc.k)))
			samples := sampleCalibrated(rng, 4000, tc.k, 2, tc.t)
			m, err := Fit(Temperature, samples)
			require.NoError(t, err)
			assert.InDelta(t, tc.t, m.T, 0.08*tc.t, "fitted T")
			// The fitted map is calibrated where the raw scores were not (unless T is 1).
			before := Uncalibrated(samples)
			probs := make([][]float64, len(samples))
			for i, s := range samples {
				probs[i] = m.Apply(s.Scores)
			}
			after := Score(samples, probs)
			assert.Less(t, after.ECE, 0.03)
			assert.Equal(t, before.Accuracy, after.Accuracy, "the choices do not move")
			if tc.t != 1 {
				assert.Less(t, after.NLL, before.NLL)
				assert.Greater(t, before.ECE, 0.08)
			}
		})
	}
}

func TestPlattRecoversAKnownMap(t *testing.T) {
	// Binary: p_yes reported as σ(z), truth σ(0.5·z − 1).
	rng := rand.New(rand.NewPCG(7, 7))
	var samples []Sample
	for range 3000 {
		z := rng.NormFloat64() * 3
		right := rng.Float64() < sigmoid(0.5*z-1)
		label := 1
		if right {
			label = 0
		}
		samples = append(samples, Sample{Scores: []float64{sigmoid(z), 0.5}, Label: label, Binary: true})
	}
	// Only candidate 0 carries the signal; fit on it alone.
	var x []float64
	var y []bool
	for _, s := range samples {
		x, y = append(x, s.Scores[0]), append(y, s.Label == 0)
	}
	a, b := fitPlatt(x, y)
	assert.InDelta(t, 0.5, a, 0.06)
	assert.InDelta(t, -1, b, 0.15)
}

func TestTopLabelMapsKeepTheChoiceAndSumToOne(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	samples := sampleCalibrated(rng, 600, 8, 1.5, 0.4)
	for _, method := range Methods {
		t.Run(string(method), func(t *testing.T) {
			m, err := Fit(method, samples)
			require.NoError(t, err)
			require.NoError(t, m.Check())
			for _, s := range samples[:100] {
				q := m.Apply(s.Scores)
				sum := 0.0
				for _, v := range q {
					assert.GreaterOrEqual(t, v, 0.0)
					sum += v
				}
				assert.InDelta(t, 1, sum, 1e-9)
				if method == Temperature || method == Platt {
					assert.Equal(t, s.Chosen(), argmax(q), "a monotone map keeps the argmax")
				}
			}
			cv, err := CrossValidate(method, samples, 5)
			require.NoError(t, err)
			assert.Less(t, cv.ECE, Uncalibrated(samples).ECE, "cross-validated ECE below the raw one")
		})
	}
}

func TestIsotonicPoolsViolators(t *testing.T) {
	// Outcomes by increasing x: 1 0 | 0 1 1 → PAV pools the first three (mean 1/3), then 1, 1.
	xs, ys := fitIsotonic([]float64{0.1, 0.2, 0.3, 0.4, 0.5}, []bool{true, false, false, true, true})
	assert.Equal(t, []float64{0.1, 0.3, 0.4, 0.5}, xs)
	assert.InDeltaSlice(t, []float64{1.0 / 3, 1.0 / 3, 0.999, 0.999}, ys, 1e-12)
	assert.InDelta(t, 1.0/3+0.5*(0.999-1.0/3), interp(0.35, xs, ys), 1e-12, "linear between the steps")
	assert.InDelta(t, 1.0/3, interp(0.01, xs, ys), 1e-12, "constant below")
}

func TestHistogramBinsByMass(t *testing.T) {
	x := make([]float64, 100)
	y := make([]bool, 100)
	for i := range x {
		x[i] = float64(i) / 100
		y[i] = i >= 50 // the upper half right
	}
	edges, values := fitHistogram(x, y)
	require.Len(t, edges, 4) // 100/25
	assert.InDelta(t, 0.245, edges[0], 1e-12)
	assert.Equal(t, 1.0, edges[3])
	assert.InDeltaSlice(t, []float64{1.0 / 27, 1.0 / 27, 26.0 / 27, 26.0 / 27}, values, 1e-12)
	m := Map{Method: Histogram, X: edges, Y: values}
	assert.InDelta(t, 26.0/27, m.top(0.9), 1e-12)
	assert.InDelta(t, 1.0/27, m.top(0.1), 1e-12)
}

func TestReliabilityAndScore(t *testing.T) {
	// Two rows at 0.95, one right; two at 0.55, both right.
	bins, ece := Reliability([]float64{0.95, 0.95, 0.55, 0.55}, []bool{true, false, true, true})
	assert.Equal(t, 2, bins[9].Count)
	assert.InDelta(t, 0.5*0.45+0.5*0.45, ece, 1e-12)

	s := []Sample{{Scores: []float64{math.Log(0.7), math.Log(0.2), math.Log(0.1)}, Label: 1}}
	m := Uncalibrated(s)
	assert.InDelta(t, 0.49+0.64+0.01, m.Brier, 1e-12)
	assert.InDelta(t, -math.Log(0.2), m.NLL, 1e-12)
	assert.Equal(t, 0.0, m.Accuracy)
	assert.InDelta(t, 0.7, m.ECE, 1e-12)
}

func TestRiskCoverageOnKnownPoints(t *testing.T) {
	pts := []Point{{0.9, true}, {0.8, false}, {0.7, true}, {0.6, true}, {0.5, false}}
	s := RiskCoverage(pts)
	// Risks at coverage 1..5 of 5: 0, 1/2, 1/3, 1/4, 2/5.
	want := []float64{0, 0.5, 1.0 / 3, 0.25, 0.4}
	for i, c := range s.Curve {
		assert.InDelta(t, want[i], c.Risk, 1e-12)
		assert.InDelta(t, float64(i+1)/5, c.Coverage, 1e-12)
	}
	assert.InDelta(t, (0+0.5+1.0/3+0.25+0.4)/5, s.AURC, 1e-12)
	assert.InDelta(t, 0.75, s.AccuracyAt80, 1e-12, "the top 4 rows: 3 right")
	assert.InDelta(t, 0.2, s.CoverageAt5, 1e-12)
	assert.InDelta(t, 0.2, s.CoverageAt10, 1e-12)
}

func TestBinomialUpper(t *testing.T) {
	// No error in n trials: (1−b)^n = δ, b = 1 − δ^(1/n).
	assert.InDelta(t, 1-math.Pow(0.1, 1.0/20), BinomialUpper(0, 20, 0.1), 1e-9)
	// One error in 10 at δ = 0.05: P(X ≤ 1) = (1−b)^10 + 10 b (1−b)^9 = 0.05 at b ≈ 0.3942.
	b := BinomialUpper(1, 10, 0.05)
	assert.InDelta(t, 0.05, math.Pow(1-b, 10)+10*b*math.Pow(1-b, 9), 1e-9)
	assert.InDelta(t, 0.3942, b, 1e-3)
}

func TestSGRMatchesAHandComputation(t *testing.T) {
	// 8 rows, by confidence: 0.9 ✓ 0.8 ✓ 0.7 ✓ 0.6 ✓ 0.5 ✗ 0.4 ✓ 0.3 ✗ 0.2 ✗. δ = 0.3 over
	// ⌈log₂ 8⌉ = 3 steps: each bound at δ/3 = 0.1. Ascending, z = 0 … 7 is 0.2 … 0.9.
	pts := []Point{{0.5, false}, {0.9, true}, {0.2, false}, {0.8, true}, {0.4, true}, {0.7, true}, {0.3, false}, {0.6, true}}
	// Budget 0.5. Step 1: z = 4, θ = 0.6: 4 rows, 0 errors, bound 1 − 0.1^(1/4) = 0.4377 < 0.5:
	// accepted, search lower. Step 2: z = 2, θ = 0.4: 6 rows, 1 error, bound b with
	// (1−b)^6 + 6b(1−b)^5 = 0.1, b = 0.510 ≥ 0.5: up. Step 3: z = 3, θ = 0.5: 5 rows, 1 error,
	// b = 0.584: up. The answer is θ = 0.6.
	th, err := SGR(pts, 0.5, 0.3)
	require.NoError(t, err)
	assert.Equal(t, 0.6, th.Probability)
	assert.InDelta(t, 0.5, th.Coverage, 1e-12)
	assert.Equal(t, 0.0, th.Risk)
	assert.InDelta(t, 1-math.Pow(0.1, 0.25), th.Bound, 1e-9)
	assert.InDelta(t, 0.7, th.Confidence, 1e-12)
	b6 := BinomialUpper(1, 6, 0.1)
	assert.InDelta(t, 0.1, math.Pow(1-b6, 6)+6*b6*math.Pow(1-b6, 5), 1e-9)
	assert.Greater(t, b6, 0.5, "so θ = 0.4 is refused")

	// Budget 0.2: θ = 0.6 (bound 0.4377), then 0.8 (2 rows, 0.684), then 0.9 (1 row, 0.9): none.
	th, err = SGR(pts, 0.2, 0.3)
	require.ErrorIs(t, err, ErrBudget)
	assert.Equal(t, Threshold{}, th, "no threshold to act on by mistake")
	assert.Contains(t, err.Error(), "0.438", "the error names the lowest bound the search met")
}

func TestProfileRoundTripAndRefusals(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	samples := map[string][]Sample{
		ScoringRaw:   sampleCalibrated(rng, 200, 8, 1.5, 0.4),
		ScoringPriDe: sampleCalibrated(rng, 200, 8, 1.5, 0.5),
	}
	model := debias.ModelID{File: "m.gguf", SHA256: "aaaa"}
	p, err := New(model, "direct-options-v1", samples, 5)
	require.NoError(t, err)
	var buf bytes.Buffer
	b, err := p.Marshal()
	require.NoError(t, err)
	buf.Write(b)
	q, err := Read(&buf)
	require.NoError(t, err)
	assert.Len(t, q.SHA256, 64)
	assert.Equal(t, p.Scorings[ScoringRaw].Fitted.Pooled, q.Scorings[ScoringRaw].Fitted.Pooled)
	assert.Equal(t, p.Scorings[ScoringRaw].Points, q.Scorings[ScoringRaw].Points)

	assert.NoError(t, q.Check(model, "direct-options-v1"))
	assert.ErrorIs(t, q.Check(debias.ModelID{File: "other.gguf", SHA256: "bbbb"}, "direct-options-v1"), ErrMismatch)
	assert.ErrorIs(t, q.Check(model, "binary-candidates-v1"), ErrMismatch)
	_, err = q.For(ScoringCyclic)
	assert.ErrorIs(t, err, ErrMismatch)
	assert.Contains(t, err.Error(), "pride, raw")

	_, err = Read(bytes.NewReader([]byte(`{"format": "other"}`)))
	assert.ErrorIs(t, err, ErrProfile)
	bad := bytes.Replace(b, []byte(`"method": "`+string(q.Scorings[ScoringRaw].Method)+`"`), []byte(`"method": "magic"`), 1)
	_, err = Read(bytes.NewReader(bad))
	assert.True(t, errors.Is(err, ErrProfile), "an unknown method is refused: %v", err)
}

func TestNewLeavesOutScoringsWithTooFewRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	p, err := New(debias.ModelID{}, "direct-options-v1", map[string][]Sample{
		ScoringRaw: sampleCalibrated(rng, 60, 8, 1.5, 0.4), "pride+permute-3": sampleCalibrated(rng, 3, 8, 1.5, 0.4)}, 5)
	require.NoError(t, err)
	assert.Equal(t, []string{"raw"}, p.Names())
	require.Len(t, p.Skipped, 1)
	assert.Contains(t, p.Skipped[0], "pride+permute-3 (")
	_, err = New(debias.ModelID{}, "direct-options-v1", map[string][]Sample{ScoringRaw: sampleCalibrated(rng, 3, 8, 1.5, 0.4)}, 5)
	assert.ErrorIs(t, err, ErrNoRows)
	_, err = CrossValidate(Temperature, sampleCalibrated(rng, 30, 8, 1.5, 0.4), 1)
	assert.ErrorContains(t, err, "at least 2 (--folds)")
}

func TestScoringOf(t *testing.T) {
	assert.Equal(t, "raw", ScoringOf(false, debias.None, 0, 8, false))
	assert.Equal(t, "pride", ScoringOf(false, debias.PriDe, 0, 8, false))
	assert.Equal(t, "pride", ScoringOf(false, debias.PriDe, 8, 8, true))
	assert.Equal(t, "pride+permute-2", ScoringOf(false, debias.PriDe, 2, 8, false))
	assert.Equal(t, "cyclic", ScoringOf(false, debias.Cyclic, 8, 8, false))
	assert.Equal(t, "permute-4", ScoringOf(false, debias.Cyclic, 4, 8, false))
	assert.Equal(t, "binary", ScoringOf(true, debias.None, 0, 8, false))
	assert.Equal(t, "contextual", ScoringOf(true, debias.Contextual, 0, 8, false))
}

// SmallestBudget is the least budget SGR certifies: SGR meets it and refuses 0.001 less. On
// 60 rows all right it is the Clopper–Pearson bound of 0 errors in the 30 rows of SGR's first
// threshold (the median: a smaller budget fails there and the search moves to fewer rows),
// 1 − (δ/6)^(1/30) with 6 steps, rounded up; on rows all wrong nothing is certified.
func TestSmallestBudget(t *testing.T) {
	var right, wrong, mixed []Point
	for i := range 60 {
		c := 0.3 + float64(i)/100
		right = append(right, Point{Confidence: c, Right: true})
		wrong = append(wrong, Point{Confidence: c})
		mixed = append(mixed, Point{Confidence: c, Right: i%4 != 0})
	}
	for _, pts := range [][]Point{right, mixed} {
		e, err := SmallestBudget(pts, 0.1)
		require.NoError(t, err)
		require.Less(t, e, 1.0)
		_, err = SGR(pts, e, 0.1)
		assert.NoError(t, err)
		_, err = SGR(pts, e-0.001, 0.1)
		assert.ErrorIs(t, err, ErrBudget)
	}
	e, _ := SmallestBudget(right, 0.1)
	assert.Equal(t, math.Ceil(1000*(1-math.Pow(0.1/6, 1.0/30)))/1000, e)
	e, err := SmallestBudget(wrong, 0.1)
	require.NoError(t, err)
	assert.Equal(t, 1.0, e)
	_, err = SmallestBudget(nil, 0.1)
	assert.ErrorIs(t, err, ErrNoRows)
}

// The shipped profile reads as a valid profile of the default model and its chat template,
// calibrates only the option counts of the bands that shipped (a rows of another count keeps
// its probabilities), and is found only by the exact model, template and prompt version.
func TestShippedProfiles(t *testing.T) {
	const model = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
	const template = "4e9918361c284a93880606d182d64da6a9fe97cdc1f5c5a78c1c8840444246fc"
	require.NotEmpty(t, shippedProfiles())
	p := ShippedProfile(model, template, "direct-options-v1")
	require.NotNil(t, p)
	assert.NotEmpty(t, p.Note)
	assert.Len(t, p.SHA256, 64)
	sc, err := p.For(ScoringPriDe)
	require.NoError(t, err)
	assert.True(t, sc.Fitted.Only)
	require.NotEmpty(t, sc.Fitted.ByOptions)
	assert.NotEmpty(t, sc.Points, "the fitting rows' calibrated confidences, for SGR")
	for k, m := range sc.Fitted.ByOptions {
		assert.True(t, k >= 2 && k <= 16, "k=%d", k)
		assert.Equal(t, Temperature, m.Method)
		assert.True(t, sc.Fitted.Covers(k))
	}
	assert.False(t, sc.Fitted.Covers(17), "above 16 options: the binary contract, not this scoring")
	scores := []float64{-3, -2, -1, -0.5, -0.2, -4, -5, -6, -7, -8, -9, -1, -2, -3, -4, -5, -6}
	assert.InDeltaSlice(t, Sample{Scores: scores}.Probabilities(), sc.Fitted.Apply(scores), 1e-12, "a count outside: unchanged")
	least, err := p.SmallestBudget(ScoringPriDe, 0.9)
	require.NoError(t, err)
	assert.Contains(t, p.Note, fmt.Sprintf("--max-error %.3f or more at confidence 0.9", least), "the profile states its certifiable range")
	sl, err := p.For(ScoringShortlist)
	require.NoError(t, err, "rows of more than 16 options decided by shortlist (docs/many-options.md)")
	assert.False(t, sl.Fitted.Only)
	assert.True(t, sl.Fitted.Covers(40) && sl.Fitted.Covers(77))
	assert.Equal(t, Temperature, sl.Fitted.Pooled.Method)
	assert.Greater(t, sl.Fitted.Pooled.T, 1.0, "the shortlist's rule is overconfident")
	assert.NotEmpty(t, sl.Points)
	assert.Contains(t, p.Note, "Shortlist rows: temperature")
	_, err = p.For(ScoringNoul)
	assert.ErrorIs(t, err, ErrMismatch, "no noul map ships (docs/calibration.md: the held-out yes/no tasks want temperatures on both sides of 1)")
	assert.Nil(t, ShippedProfile(model, "another template", "direct-options-v1"))
	assert.Nil(t, ShippedProfile("another model", template, "direct-options-v1"))
	assert.Nil(t, ShippedProfile(model, template, "binary-candidates-v1"))
}

// A decision's SGR point is the probability of the answer it gives: a yes/no question's is
// P(yes) when it answers yes and 1 − P(yes) when it answers no, right when that answer is the
// label's; a choice's is its chosen option's.
func TestSamplePoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     Sample
		probs []float64
		want  Point
	}{
		{"noul yes, labelled yes", Sample{Scores: []float64{0.8}, Label: 0, Binary: true}, []float64{0.7}, Point{0.7, true}},
		{"noul no, labelled yes", Sample{Scores: []float64{0.3}, Label: 0, Binary: true}, []float64{0.2}, Point{0.8, false}},
		{"noul no, labelled no", Sample{Scores: []float64{0.3}, Label: 1, Binary: true}, []float64{0.4}, Point{0.6, true}},
		{"noul yes, labelled no", Sample{Scores: []float64{0.9}, Label: 1, Binary: true}, []float64{0.5}, Point{0.5, false}},
		{"a map that crosses 0.5 keeps the answer", Sample{Scores: []float64{0.55}, Label: 0, Binary: true}, []float64{0.45}, Point{0.45, true}},
		{"binary candidates", Sample{Scores: []float64{0.2, 0.9, 0.4}, Label: 1, Binary: true}, []float64{0.1, 0.6, 0.3}, Point{0.6, true}},
		{"direct", Sample{Scores: []float64{-2, -0.1, -3}, Label: 2}, []float64{0.1, 0.85, 0.05}, Point{0.85, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.s.Point(tc.probs)
			assert.InDelta(t, tc.want.Confidence, got.Confidence, 1e-12)
			assert.Equal(t, tc.want.Right, got.Right)
		})
	}
}
