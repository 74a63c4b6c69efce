package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
)

// Point is one labelled decision as selective classification sees it: the (calibrated)
// probability of its choice and whether the choice was right. JSON: [probability, 0|1].
type Point struct {
	Confidence float64
	Right      bool
}

// MarshalJSON writes [confidence, 1] or [confidence, 0].
func (p Point) MarshalJSON() ([]byte, error) {
	r := 0
	if p.Right {
		r = 1
	}
	return fmt.Appendf(nil, "[%s,%d]", formatFloat(p.Confidence), r), nil
}

// UnmarshalJSON reads [confidence, 0|1].
func (p *Point) UnmarshalJSON(b []byte) error {
	var v [2]float64
	if err := json.Unmarshal(b, &v); err != nil || (v[1] != 0 && v[1] != 1) {
		return fmt.Errorf("calibrate: a point is [confidence, 0|1], not %s", b)
	}
	p.Confidence, p.Right = v[0], v[1] == 1
	return nil
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// CurvePoint is one point of a risk–coverage curve: deciding only the Covered most confident
// rows (Coverage of all) gives Risk, the error rate among them, at probabilities ≥ Threshold.
type CurvePoint struct {
	Covered   int     `json:"covered"`
	Coverage  float64 `json:"coverage"`
	Risk      float64 `json:"risk"`
	Threshold float64 `json:"threshold"`
}

// Selective summarises a risk–coverage curve (Geifman & El-Yaniv 2017; El-Yaniv & Wiener
// 2010 for the curve; the AURC as in Geifman et al., "Bias-Reduced Uncertainty Estimation for
// Deep Neural Classifiers", ICLR 2019).
type Selective struct {
	Rows int `json:"rows"`
	// AURC is the area under the risk–coverage curve: the mean of the risks at coverage 1/n,
	// 2/n, …, 1 (0 is best; a random order gives the error rate).
	AURC float64 `json:"aurc"`
	// AccuracyAt80 is the accuracy of the 80 % most confident rows (⌈0.8 n⌉ of them).
	AccuracyAt80 float64 `json:"accuracy_at_80_coverage"`
	// CoverageAt5 and CoverageAt10 are the largest coverage whose error rate is at most 5 %
	// and 10 % (0 when not even the most confident row qualifies).
	CoverageAt5  float64      `json:"coverage_at_5_error"`
	CoverageAt10 float64      `json:"coverage_at_10_error"`
	Curve        []CurvePoint `json:"curve"`
}

// RiskCoverage sorts the points by confidence, highest first (ties in their given order), and
// returns the curve, one point per row, and its summary.
func RiskCoverage(points []Point) Selective {
	s := Selective{Rows: len(points)}
	if len(points) == 0 {
		return s
	}
	ps := sortedDesc(points)
	n := float64(len(ps))
	wrong := 0
	for i, p := range ps {
		if !p.Right {
			wrong++
		}
		c := CurvePoint{Covered: i + 1, Coverage: float64(i+1) / n, Risk: float64(wrong) / float64(i+1), Threshold: p.Confidence}
		s.Curve = append(s.Curve, c)
		s.AURC += c.Risk / n
		if c.Risk <= 0.05 {
			s.CoverageAt5 = c.Coverage
		}
		if c.Risk <= 0.10 {
			s.CoverageAt10 = c.Coverage
		}
	}
	k := int(math.Ceil(0.8*n - 1e-9))
	s.AccuracyAt80 = 1 - s.Curve[k-1].Risk
	return s
}

func sortedDesc(points []Point) []Point {
	ps := append([]Point(nil), points...)
	sort.SliceStable(ps, func(a, b int) bool { return ps[a].Confidence > ps[b].Confidence })
	return ps
}

// ErrBudget: no threshold keeps the error rate within the budget at the confidence asked.
var ErrBudget = errors.New("calibrate: no threshold meets the error budget")

// Threshold is the abstention threshold SGR chose: decide the rows whose probability is at
// least Probability, abstain on the rest.
type Threshold struct {
	Probability float64 `json:"probability"`
	// MaxError and Confidence are the budget: with probability Confidence (1−δ) over the
	// fitting rows, the error rate of the rows answered (confidence ≥ Probability) is at most MaxError.
	MaxError   float64 `json:"max_error"`
	Confidence float64 `json:"confidence"`
	// Coverage and Risk are the fitting rows' share answered and error rate among them at
	// Probability; Bound the binomial upper bound on the error rate (< MaxError).
	Coverage float64 `json:"coverage"`
	Risk     float64 `json:"risk"`
	Bound    float64 `json:"bound"`
	Rows     int     `json:"rows"`
}

// SGR is Selection with Guaranteed Risk (Geifman & El-Yaniv, "Selective Classification for
// Deep Neural Networks", NeurIPS 2017, Algorithm 1): a binary search over the m fitting rows
// sorted by confidence, ⌈log₂ m⌉ steps; at each candidate threshold θ, the error rate r̂ of the
// rows with confidence ≥ θ gets the binomial tail bound B*(r̂, δ/⌈log₂ m⌉) (Bound), and the
// search moves to lower thresholds (more coverage) while the bound is below maxError. It
// returns the lowest threshold tested whose bound is below maxError. With probability 1−δ the
// error rate of future rows answered at that threshold is at most maxError (a union bound over
// the thresholds tested). Errors: ErrBudget (with a zero Threshold) when no tested threshold
// qualifies, naming the lowest bound the search met; ErrNoRows without points.
func SGR(points []Point, maxError, delta float64) (Threshold, error) {
	m := len(points)
	if m == 0 {
		return Threshold{}, fmt.Errorf("%w: no fitting rows to choose a threshold from", ErrNoRows)
	}
	if !(maxError > 0 && maxError < 1) || !(delta > 0 && delta < 1) {
		return Threshold{}, fmt.Errorf("calibrate: max error %v and δ %v must lie in (0, 1)", maxError, delta)
	}
	ps := sortedDesc(points) // ps[j]: the (j+1)-th most confident
	// asc[z] is the z-th lowest confidence (z from 0): the paper's ascending order.
	asc := func(z int) float64 { return ps[m-1-z].Confidence }
	steps := max(1, int(math.Ceil(math.Log2(float64(m)))))
	deltaStep := delta / float64(steps)
	zmin, zmax := 0, m-1
	best := Threshold{MaxError: maxError, Confidence: 1 - delta, Rows: m, Bound: math.Inf(1)}
	found := false
	var closest Threshold
	closest.Bound = math.Inf(1)
	for range steps {
		z := (zmin + zmax + 1) / 2
		theta := asc(z)
		covered, wrong := 0, 0
		for _, p := range ps {
			if p.Confidence < theta {
				break
			}
			covered++
			if !p.Right {
				wrong++
			}
		}
		bound := BinomialUpper(wrong, covered, deltaStep)
		t := Threshold{Probability: theta, MaxError: maxError, Confidence: 1 - delta, Rows: m,
			Coverage: float64(covered) / float64(m), Risk: float64(wrong) / float64(covered), Bound: bound}
		if bound < closest.Bound {
			closest = t
		}
		if bound < maxError {
			if !found || theta < best.Probability {
				best = t
			}
			found = true
			zmax = z
		} else {
			zmin = z
		}
	}
	if !found {
		return Threshold{}, fmt.Errorf("%w: an error rate of at most %.3g with confidence %.3g: the lowest bound among the %d thresholds SGR's search tested on %d fitting rows is %.3g (coverage %.1f%%, error %.3g there); allow more error, less confidence, or fit on more rows",
			ErrBudget, maxError, 1-delta, steps, m, closest.Bound, 100*closest.Coverage, closest.Risk)
	}
	return best, nil
}

// BinomialUpper is the one-sided (1−δ) upper confidence bound on an error rate from k errors
// in n trials (Clopper–Pearson; the paper's B*): the largest b with P(Binomial(n, b) ≤ k) ≥ δ,
// found by bisection. n = 0 gives 1.
func BinomialUpper(k, n int, delta float64) float64 {
	if n == 0 || k >= n {
		return 1
	}
	lo, hi := float64(k)/float64(n), 1.0
	for range 100 {
		mid := (lo + hi) / 2
		if binomialCDF(k, n, mid) >= delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// binomialCDF is P(Binomial(n, p) ≤ k), summed in log space.
func binomialCDF(k, n int, p float64) float64 {
	if p <= 0 {
		return 1
	}
	if p >= 1 {
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	lgN, _ := math.Lgamma(float64(n) + 1)
	total := 0.0
	for j := 0; j <= k; j++ {
		a, _ := math.Lgamma(float64(j) + 1)
		b, _ := math.Lgamma(float64(n-j) + 1)
		total += math.Exp(lgN - a - b + float64(j)*lp + float64(n-j)*lq)
	}
	return min(total, 1)
}

// SmallestBudget is the smallest error budget SGR certifies on points at confidence 1−δ: the
// least E in (0, 1) for which SGR(points, E, δ) finds a threshold, to three decimals (rounded
// up, so that SGR meets the budget returned). A budget below it is refused (ErrBudget); 1 when
// no budget below 1 is certified. Errors: ErrNoRows without points.
func SmallestBudget(points []Point, delta float64) (float64, error) {
	if len(points) == 0 {
		return 0, fmt.Errorf("%w: no fitting rows to choose a threshold from", ErrNoRows)
	}
	ok := func(e float64) bool { _, err := SGR(points, e, delta); return err == nil }
	if !ok(0.999) {
		return 1, nil
	}
	lo, hi := 0, 999 // thousandths: ok(hi/1000) holds, and E = lo/1000 is below the least
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(float64(mid) / 1000) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return float64(hi) / 1000, nil
}
