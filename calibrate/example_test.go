package calibrate_test

import (
	"fmt"
	"math"

	"github.com/gojev/gojev/calibrate"
)

// Fit a temperature to labelled decisions, then calibrate a new decision's scores (its
// log-probabilities over the options, as a Result's options carry them).
func ExampleFit() {
	// Three options; the model says 0.5 / 0.3 / 0.2 and is right more often than that.
	scores := []float64{math.Log(0.5), math.Log(0.3), math.Log(0.2)}
	var samples []calibrate.Sample
	for i := range 100 {
		label := 0
		if i%10 == 9 {
			label = 1 + i%2 // 90 % of such decisions are right
		}
		samples = append(samples, calibrate.Sample{Scores: scores, Label: label})
	}
	m, err := calibrate.Fit(calibrate.Temperature, samples)
	if err != nil {
		panic(err)
	}
	p := m.Apply(scores)
	// One T rescales the whole distribution: the chosen option's 0.5 becomes 0.84, the best
	// one temperature can do for all three options at once (the wrong answers are not 3:2).
	fmt.Printf("%s: %.2f %.2f %.2f\n", m.Describe(), p[0], p[1], p[2])
	// Output: T=0.271: 0.84 0.13 0.03
}

// Choose the abstention threshold that keeps the error rate of the decided rows at most 10 %
// with 90 % confidence, from the (calibrated) probabilities of labelled decisions and whether
// each was right.
func ExampleSGR() {
	var points []calibrate.Point
	for i := range 1000 {
		p := 0.3 + 0.7*float64(i)/1000
		// Rows at probability p are right with probability p (every 10th share, deterministic).
		right := float64(i%10)/10 < p
		points = append(points, calibrate.Point{Confidence: p, Right: right})
	}
	th, err := calibrate.SGR(points, 0.10, 0.1)
	if err != nil {
		panic(err)
	}
	fmt.Printf("decide at p ≥ %.3f: %.0f%% of the rows, error %.3f, bound %.3f\n", th.Probability, 100*th.Coverage, th.Risk, th.Bound)
	// Output: decide at p ≥ 0.783: 31% of the rows, error 0.058, bound 0.097
}
