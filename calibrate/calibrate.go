// Package calibrate turns a decision's scores into probabilities that match how often such
// decisions are right, fitted once per model and task on labelled results, and chooses the
// abstention threshold that keeps the error rate of the decided rows within a budget.
//
// A calibration map never changes a choice: it reads the scores the contract's prompts gave
// (raw, or bias control's debiased ones), and its output is monotone in them. Four maps, each
// from its paper, are fitted and compared by cross-validation (CrossValidate):
//
//   - Temperature scaling (Guo et al., "On Calibration of Modern Neural Networks", ICML 2017):
//     softmax(scores/T), one T minimising the negative log-likelihood of the labels.
//   - Platt scaling (Platt, "Probabilistic Outputs for Support Vector Machines", 1999) of the
//     chosen option's probability c: σ(a·logit(c) + b), with Platt's smoothed targets.
//   - Histogram binning (Zadrozny & Elkan, ICML 2001): c mapped to the share of right answers
//     among the fitting rows whose c fell in the same equal-mass bin.
//   - Isotonic regression (Zadrozny & Elkan, KDD 2002): the non-decreasing step function of c
//     closest to the right/wrong outcomes (pool-adjacent-violators), interpolated linearly
//     between its steps as scikit-learn's IsotonicRegression does.
//
// Under the direct contract a Sample's scores are log-probabilities over the listed options;
// temperature scaling rescales them all, and the three maps of c (top-label maps) set the chosen
// option's probability and share the rest among the other options in proportion to their
// probabilities. Under the binary contract every candidate's p_yes is its own binary question
// (is this candidate the right one?), and each map applies to every p_yes (temperature: σ(logit
// p / T)).
//
// Selective classification (selective.go): the risk–coverage curve, its area (AURC), and the
// threshold of Geifman & El-Yaniv's SGR, which bounds the error rate of the rows not abstained
// with a chosen confidence.
package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/gojev/gojev/debias"
)

// Method names a calibration map, as profiles and jev calibrate spell it.
type Method string

const (
	// Temperature is temperature scaling (Guo et al. 2017).
	Temperature Method = "temperature"
	// Platt is Platt scaling of the chosen option's log-odds (Platt 1999).
	Platt Method = "platt"
	// Histogram is histogram binning with equal-mass bins (Zadrozny & Elkan 2001).
	Histogram Method = "histogram"
	// Isotonic is isotonic regression by pool-adjacent-violators (Zadrozny & Elkan 2002).
	Isotonic Method = "isotonic"
)

// Methods are the maps CrossValidate compares, in the order reports list them.
var Methods = []Method{Temperature, Platt, Histogram, Isotonic}

// Errors of fitting and applying maps, testable with errors.Is.
var (
	// ErrNoRows: too few labelled rows to fit (or cross-validate) a map.
	ErrNoRows = errors.New("calibrate: not enough labelled rows")
	// ErrMethod: an unknown method, or a map whose parameters are out of range.
	ErrMethod = errors.New("calibrate: bad calibration map")
)

// Sample is one labelled decision as a map sees it.
type Sample struct {
	// Scores: direct, the log-probabilities over the listed options in row order (a constant
	// shift does not matter: they are renormalised); binary, each candidate's p_yes.
	Scores []float64
	// Label is the index of the gold option in Scores.
	Label int
	// Binary marks a binary-contract decision (Scores are p_yes values).
	Binary bool
}

// Chosen is the index of the highest score (the first on a tie), as the Decider chooses.
func (s Sample) Chosen() int { return argmax(s.Scores) }

// Point is the decision's point for selective prediction (SGR), given its probabilities probs
// (Map.Apply's, in row order): the probability of the answer given and whether it is right. A
// yes/no question's sample (binary, one score: P(yes), Label 0 for yes) answers yes when its
// uncalibrated P(yes) ≥ 0.5, with the calibrated P(yes), else no with 1 − P(yes), as the
// Decider's Result reports it; any other's answer is its Chosen option.
func (s Sample) Point(probs []float64) Point {
	if s.Binary && len(probs) == 1 && len(s.Scores) == 1 {
		yes := s.Scores[0] >= 0.5
		conf := probs[0]
		if !yes {
			conf = 1 - conf
		}
		return Point{Confidence: conf, Right: yes == (s.Label == 0)}
	}
	c := s.Chosen()
	return Point{Confidence: probs[c], Right: c == s.Label}
}

// Probabilities are the decision's uncalibrated probabilities: the softmax of the scores
// (direct), or the p_yes values themselves (binary).
func (s Sample) Probabilities() []float64 {
	if s.Binary {
		return slices.Clone(s.Scores)
	}
	return softmax(s.Scores, 1)
}

// Map is one fitted calibration map. Its fields are its parameters, as profiles store them.
type Map struct {
	Method Method `json:"method"`
	// Binary: fitted on binary-contract candidates (p_yes values).
	Binary bool `json:"binary,omitempty"`
	// T is Temperature's temperature (> 0; below 1 sharpens, above 1 softens).
	T float64 `json:"t,omitempty"`
	// A and B are Platt's σ(A·logit(c) + B).
	A float64 `json:"a,omitempty"`
	B float64 `json:"b,omitempty"`
	// X and Y: Histogram, the upper edges of the bins (the last is 1) and each bin's share of
	// right answers; Isotonic, the step points (increasing x) the map interpolates between.
	X []float64 `json:"x,omitempty"`
	Y []float64 `json:"y,omitempty"`
	// Rows is how many labelled rows it was fitted on.
	Rows int `json:"rows"`
	// Shrink is the prior a temperature fitted on few rows was shrunk toward (FitShrunk); nil
	// for a maximum-likelihood fit.
	Shrink *Shrink `json:"shrink,omitempty"`
}

// Apply returns a decision's calibrated probabilities, in row order: direct, a distribution
// over the options; binary, each candidate's calibrated p_yes. The chosen option keeps the
// highest score. scores are as in Sample.Scores.
func (m Map) Apply(scores []float64) []float64 {
	if m.Binary {
		out := make([]float64, len(scores))
		for i, p := range scores {
			out[i] = m.top(p)
		}
		return out
	}
	if m.Method == Temperature {
		return softmax(scores, m.T)
	}
	p := softmax(scores, 1)
	c := argmax(p)
	q := m.top(p[c])
	out := make([]float64, len(p))
	rest := 1 - p[c]
	for i := range p {
		switch {
		case i == c:
			out[i] = q
		case rest > 1e-300:
			out[i] = p[i] * (1 - q) / rest
		default:
			out[i] = (1 - q) / float64(len(p)-1)
		}
	}
	return out
}

// top maps one probability: the chosen option's (direct top-label maps) or a p_yes (binary).
func (m Map) top(c float64) float64 {
	switch m.Method {
	case Temperature:
		return sigmoid(logit(c) / m.T)
	case Platt:
		return sigmoid(m.A*logit(c) + m.B)
	case Histogram:
		i := sort.SearchFloat64s(m.X, c)
		return m.Y[min(i, len(m.Y)-1)]
	case Isotonic:
		return interp(c, m.X, m.Y)
	}
	return math.NaN()
}

// Check reports ErrMethod for an unknown method or parameters out of range.
func (m Map) Check() error {
	switch m.Method {
	case Temperature:
		if !(m.T > 0) || math.IsInf(m.T, 0) {
			return fmt.Errorf("%w: temperature %v", ErrMethod, m.T)
		}
	case Platt:
		if math.IsNaN(m.A) || math.IsInf(m.A, 0) || math.IsNaN(m.B) || math.IsInf(m.B, 0) || m.A < 0 {
			return fmt.Errorf("%w: platt a=%v b=%v (a must be ≥ 0: the map is monotone)", ErrMethod, m.A, m.B)
		}
	case Histogram, Isotonic:
		if len(m.X) == 0 || len(m.X) != len(m.Y) {
			return fmt.Errorf("%w: %s with %d x and %d y", ErrMethod, m.Method, len(m.X), len(m.Y))
		}
		for i := range m.X {
			if !(m.Y[i] >= 0 && m.Y[i] <= 1) || (i > 0 && m.X[i] < m.X[i-1]) || (m.Method == Isotonic && i > 0 && m.Y[i] < m.Y[i-1]) {
				return fmt.Errorf("%w: %s step %d (x %v, y %v)", ErrMethod, m.Method, i, m.X[i], m.Y[i])
			}
		}
	default:
		return fmt.Errorf("%w: unknown method %q (want temperature, platt, histogram or isotonic)", ErrMethod, m.Method)
	}
	return nil
}

// Describe is the map's parameters in a few words ("T=0.35", "a=2.10 b=0.85", "8 bins").
func (m Map) Describe() string {
	switch m.Method {
	case Temperature:
		return fmt.Sprintf("T=%.3g", m.T)
	case Platt:
		return fmt.Sprintf("a=%.3g b=%.3g", m.A, m.B)
	case Histogram:
		return fmt.Sprintf("%d bins", len(m.X))
	case Isotonic:
		return fmt.Sprintf("%d steps", len(m.X))
	}
	return string(m.Method)
}

// Fit fits one map of method to labelled samples (all direct or all binary). Errors: ErrNoRows
// for fewer than 2 samples, ErrMethod for an unknown method.
func Fit(method Method, samples []Sample) (Map, error) {
	if len(samples) < 2 {
		return Map{}, fmt.Errorf("%w: %d rows to fit %s", ErrNoRows, len(samples), method)
	}
	binary := samples[0].Binary
	m := Map{Method: method, Binary: binary, Rows: len(samples)}
	var x []float64
	var y []bool
	if binary {
		x, y = candidates(samples)
	} else if method != Temperature {
		for _, s := range samples {
			p := softmax(s.Scores, 1)
			c := argmax(p)
			x, y = append(x, p[c]), append(y, c == s.Label)
		}
	}
	switch method {
	case Temperature:
		if binary {
			m.T = 1 / fitScale(func(beta float64) float64 {
				return binaryNLL(x, y, func(p float64) float64 { return sigmoid(beta * logit(p)) })
			})
		} else {
			m.T = 1 / fitScale(func(beta float64) float64 { return softmaxNLL(samples, beta) })
		}
	case Platt:
		m.A, m.B = fitPlatt(x, y)
	case Histogram:
		m.X, m.Y = fitHistogram(x, y)
	case Isotonic:
		m.X, m.Y = fitIsotonic(x, y)
	default:
		return Map{}, fmt.Errorf("%w: unknown method %q", ErrMethod, method)
	}
	return m, nil
}

// candidates flattens binary samples into one (p_yes, is the gold candidate) pair per
// candidate: what a binary map is fitted on.
func candidates(samples []Sample) (x []float64, y []bool) {
	for _, s := range samples {
		for i, p := range s.Scores {
			x, y = append(x, p), append(y, i == s.Label)
		}
	}
	return x, y
}

// fitScale minimises a convex function of β = 1/T over β ∈ [1/100, 100] by golden-section
// search on log β (the negative log-likelihood of softmax(β·s) is convex in β).
func fitScale(nll func(beta float64) float64) float64 {
	lo, hi := math.Log(0.01), math.Log(100.0)
	g := (math.Sqrt(5) - 1) / 2
	a, b := hi-g*(hi-lo), lo+g*(hi-lo)
	fa, fb := nll(math.Exp(a)), nll(math.Exp(b))
	for hi-lo > 1e-9 {
		if fa < fb {
			hi, b, fb = b, a, fa
			a = hi - g*(hi-lo)
			fa = nll(math.Exp(a))
		} else {
			lo, a, fa = a, b, fb
			b = lo + g*(hi-lo)
			fb = nll(math.Exp(b))
		}
	}
	return math.Exp((lo + hi) / 2)
}

// softmaxNLL is the mean negative log-likelihood of the labels under softmax(β·scores).
func softmaxNLL(samples []Sample, beta float64) float64 {
	total := 0.0
	for _, s := range samples {
		total -= logSoftmax(s.Scores, 1/beta)[s.Label]
	}
	return total / float64(len(samples))
}

// binaryNLL is the mean negative log-likelihood of outcomes y under probabilities f(x).
func binaryNLL(x []float64, y []bool, f func(float64) float64) float64 {
	total := 0.0
	for i := range x {
		total += logLoss(f(x[i]), y[i])
	}
	return total / float64(len(x))
}

// fitPlatt fits σ(a·logit(x) + b) to outcomes y by Newton's method on the log-likelihood with
// Platt's targets (N₊+1)/(N₊+2) and 1/(N₋+2), which keep a and b finite when the outcomes are
// separable. a is kept ≥ 0, so the map is monotone.
func fitPlatt(x []float64, y []bool) (a, b float64) {
	nPos := 0
	for _, v := range y {
		if v {
			nPos++
		}
	}
	hiT, loT := (float64(nPos)+1)/(float64(nPos)+2), 1/(float64(len(y)-nPos)+2)
	z := make([]float64, len(x))
	t := make([]float64, len(x))
	for i := range x {
		z[i] = logit(x[i])
		t[i] = loT
		if y[i] {
			t[i] = hiT
		}
	}
	loss := func(a, b float64) float64 {
		s := 0.0
		for i := range z {
			p := clamp(sigmoid(a*z[i] + b))
			s -= t[i]*math.Log(p) + (1-t[i])*math.Log(1-p)
		}
		return s
	}
	a, b = 1, 0
	cur := loss(a, b)
	for range 100 {
		var ga, gb, haa, hab, hbb float64
		for i := range z {
			p := sigmoid(a*z[i] + b)
			d := p - t[i]
			w := max(p*(1-p), 1e-12)
			ga += d * z[i]
			gb += d
			haa += w * z[i] * z[i]
			hab += w * z[i]
			hbb += w
		}
		haa, hbb = haa+1e-9, hbb+1e-9
		det := haa*hbb - hab*hab
		if det <= 0 {
			break
		}
		da, db := (hbb*ga-hab*gb)/det, (haa*gb-hab*ga)/det
		step := 1.0
		for ; step > 1e-10; step /= 2 {
			na, nb := max(a-step*da, 0), b-step*db
			if l := loss(na, nb); l <= cur {
				a, b, cur = na, nb, l
				break
			}
		}
		if step <= 1e-10 || math.Abs(da)+math.Abs(db) < 1e-10 {
			break
		}
	}
	return a, b
}

// fitHistogram bins x into equal-mass bins (about 25 rows each, 2 to 10 bins) and maps each
// bin to its share of right answers, smoothed as (right+1)/(n+2) so no bin says 0 or 1. X holds
// each bin's upper edge (the midpoint to the next bin's lowest x; the last is 1).
func fitHistogram(x []float64, y []bool) (edges, values []float64) {
	idx := sortedIndex(x)
	nb := min(max(len(x)/25, 2), 10, len(x))
	for b := range nb {
		lo, hi := b*len(x)/nb, (b+1)*len(x)/nb
		right := 0
		for _, i := range idx[lo:hi] {
			if y[i] {
				right++
			}
		}
		edge := 1.0
		if b < nb-1 {
			edge = (x[idx[hi-1]] + x[idx[hi]]) / 2
		}
		edges = append(edges, edge)
		values = append(values, (float64(right)+1)/(float64(hi-lo)+2))
	}
	return edges, values
}

// fitIsotonic is pool-adjacent-violators on the outcomes of x sorted increasing: each block of
// pooled rows takes its mean outcome, and blocks merge until the means do not decrease. The
// step points are each block's lowest and highest x with its mean, clipped to [0.001, 0.999]
// so no probability is 0 or 1.
func fitIsotonic(x []float64, y []bool) (xs, ys []float64) {
	idx := sortedIndex(x)
	type block struct {
		sum, n   float64
		xlo, xhi float64
	}
	var st []block
	for _, i := range idx {
		v := 0.0
		if y[i] {
			v = 1
		}
		st = append(st, block{v, 1, x[i], x[i]})
		for len(st) > 1 && st[len(st)-2].sum/st[len(st)-2].n >= st[len(st)-1].sum/st[len(st)-1].n {
			a, b := st[len(st)-2], st[len(st)-1]
			st = append(st[:len(st)-2], block{a.sum + b.sum, a.n + b.n, a.xlo, b.xhi})
		}
	}
	for _, b := range st {
		v := min(max(b.sum/b.n, 0.001), 0.999)
		xs, ys = append(xs, b.xlo), append(ys, v)
		if b.xhi > b.xlo {
			xs, ys = append(xs, b.xhi), append(ys, v)
		}
	}
	return xs, ys
}

// interp is numpy.interp: linear between the points (xs increasing), constant outside them.
func interp(x float64, xs, ys []float64) float64 {
	if x <= xs[0] {
		return ys[0]
	}
	if x >= xs[len(xs)-1] {
		return ys[len(ys)-1]
	}
	i := sort.SearchFloat64s(xs, x) // xs[i-1] < x <= xs[i]
	if xs[i] == xs[i-1] {
		return ys[i]
	}
	f := (x - xs[i-1]) / (xs[i] - xs[i-1])
	return ys[i-1] + f*(ys[i]-ys[i-1])
}

func sortedIndex(x []float64) []int {
	idx := make([]int, len(x))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return x[idx[a]] < x[idx[b]] })
	return idx
}

func argmax(x []float64) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// logSoftmax returns log softmax(x/t) (debias.LogSoftmax of the scaled scores).
func logSoftmax(x []float64, t float64) []float64 {
	s := make([]float64, len(x))
	for i, v := range x {
		s[i] = v / t
	}
	return debias.LogSoftmax(s)
}

func softmax(x []float64, t float64) []float64 {
	out := logSoftmax(x, t)
	for i, v := range out {
		out[i] = math.Exp(v)
	}
	return out
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

// logit is log(p/(1−p)), with p kept inside [1e-12, 1−1e-12].
func logit(p float64) float64 {
	p = min(max(p, 1e-12), 1-1e-12)
	return math.Log(p / (1 - p))
}

func clamp(p float64) float64 { return min(max(p, 1e-15), 1-1e-15) }

// logLoss is −log p for a right outcome, −log(1−p) for a wrong one.
func logLoss(p float64, right bool) float64 {
	p = clamp(p)
	if right {
		return -math.Log(p)
	}
	return -math.Log(1 - p)
}
