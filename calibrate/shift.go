package calibrate

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// RowStats are label-free statistics of a set of decisions, for comparing the rows a profile
// was fitted on with the rows it serves: the mean and spread of the uncalibrated probability
// of the choice (Top) and of the entropy of each decision's distribution divided by log k
// (Entropy, 0 for a sure choice, 1 for a uniform one), and how often each answer position was
// chosen (Letters, by position A, B, …). K is the rows' option count when they share one, else
// -1 (their letters are then not compared).
type RowStats struct {
	Rows                  int
	K                     int
	TopMean, TopSD        float64
	EntropyMean           float64
	EntropySD             float64
	Letters               []int
	topSum, topSq         float64
	entropySum, entropySq float64
}

// rowStatsJSON is RowStats as profiles and run files store it.
type rowStatsJSON struct {
	Rows        int     `json:"rows"`
	K           int     `json:"k"`
	TopMean     float64 `json:"top_mean"`
	TopSD       float64 `json:"top_sd"`
	EntropyMean float64 `json:"entropy_mean"`
	EntropySD   float64 `json:"entropy_sd"`
	Letters     []int   `json:"letters"`
}

// Add counts one decision of k ≥ 2 options by its uncalibrated probabilities (row order) and
// the position of its choice (0 for A). Decisions of one option add nothing.
func (s *RowStats) Add(probs []float64, chosen int) {
	k := len(probs)
	if k < 2 || chosen < 0 || chosen >= k {
		return
	}
	top, h := probs[chosen], 0.0
	for _, p := range probs {
		if p > 0 {
			h -= p * math.Log(p)
		}
	}
	h /= math.Log(float64(k))
	switch {
	case s.Rows == 0:
		s.K = k
	case s.K != k:
		s.K = -1
	}
	s.Rows++
	s.topSum, s.topSq = s.topSum+top, s.topSq+top*top
	s.entropySum, s.entropySq = s.entropySum+h, s.entropySq+h*h
	for len(s.Letters) <= chosen {
		s.Letters = append(s.Letters, 0)
	}
	s.Letters[chosen]++
	n := float64(s.Rows)
	s.TopMean, s.EntropyMean = s.topSum/n, s.entropySum/n
	s.TopSD = math.Sqrt(max(0, s.topSq/n-s.TopMean*s.TopMean))
	s.EntropySD = math.Sqrt(max(0, s.entropySq/n-s.EntropyMean*s.EntropyMean))
}

// StatsOf are the RowStats of labelled samples (their uncalibrated probabilities and choices).
func StatsOf(samples []Sample) RowStats {
	var s RowStats
	for _, x := range samples {
		if !x.Binary {
			s.Add(x.Probabilities(), x.Chosen())
		}
	}
	return s
}

// Shift is the comparison of a run's RowStats with a profile's fitting rows' (Compare).
type Shift struct {
	// Shifted: the run's rows differ from the fitting rows beyond sampling noise, so the
	// profile's probabilities, and an SGR bound from its fitting rows (--max-error), need not
	// hold for them.
	Shifted bool `json:"shifted"`
	// TopZ and EntropyZ are the two-sample z statistics of the means (run minus fitting);
	// LettersP the p-value of a chi-square test that the chosen positions share one
	// distribution (1 when there are too few rows to test, or the two sides' rows do not
	// share one option count).
	TopZ     float64 `json:"top_z"`
	EntropyZ float64 `json:"entropy_z"`
	LettersP float64 `json:"letters_p"`
	// OptionsDiffer: the fitting rows share one option count and the run's rows have another
	// (or several). Such rows are another population whatever their statistics: a temperature
	// fitted at one count need not hold at another (docs/calibration.md measured it).
	OptionsDiffer bool `json:"options_differ,omitempty"`
	// Why says, for a person, what differs ("" when nothing does).
	Why string `json:"why,omitempty"`
}

// ShiftZ and ShiftP are the thresholds of Compare: a mean more than ShiftZ standard errors
// away, or a chosen-position distribution with a chi-square p-value below ShiftP.
const (
	ShiftZ = 4.0
	ShiftP = 1e-4
)

// MinShiftRows is the fewest rows on each side that Compare tests.
const MinShiftRows = 20

// Compare tests whether the rows a run decided (run) are drawn like a profile's fitting rows
// (fit): the means of Top and Entropy by two-sample z tests (|z| > ShiftZ) and the chosen
// positions by a chi-square test of homogeneity (p < ShiftP). Fewer than MinShiftRows rows on
// either side test nothing. The thresholds are strict because a profile is applied to many
// files: a shift reported is a shift. Rows of another option count than fitting rows that
// share one are a shift whatever their number (OptionsDiffer): that is not a test.
func Compare(fit, run RowStats) Shift {
	out := Shift{LettersP: 1}
	var why []string
	if fit.K > 0 && run.Rows > 0 && run.K != fit.K {
		out.OptionsDiffer = true
		if run.K > 0 {
			why = append(why, fmt.Sprintf("these rows have %d options, the fitting rows all %d", run.K, fit.K))
		} else {
			why = append(why, fmt.Sprintf("these rows have several option counts, the fitting rows all %d options", fit.K))
		}
	}
	if fit.Rows < MinShiftRows || run.Rows < MinShiftRows {
		out.Shifted, out.Why = len(why) > 0, strings.Join(why, "; ")
		return out
	}
	z := func(m1, s1 float64, n1 int, m2, s2 float64, n2 int) float64 {
		se := math.Sqrt(s1*s1/float64(n1) + s2*s2/float64(n2))
		if se == 0 {
			if m1 == m2 {
				return 0
			}
			return math.Copysign(1e9, m2-m1) // no spread on either side: any difference is one (JSON has no infinity)
		}
		return (m2 - m1) / se
	}
	out.TopZ = z(fit.TopMean, fit.TopSD, fit.Rows, run.TopMean, run.TopSD, run.Rows)
	out.EntropyZ = z(fit.EntropyMean, fit.EntropySD, fit.Rows, run.EntropyMean, run.EntropySD, run.Rows)
	if fit.K > 0 && fit.K == run.K {
		out.LettersP = homogeneity(fit.Letters, run.Letters)
	}
	if math.Abs(out.TopZ) > ShiftZ {
		why = append(why, fmt.Sprintf("the mean probability of the choice is %.3f against the fitting rows' %.3f (z = %.1f)", run.TopMean, fit.TopMean, out.TopZ))
	}
	if math.Abs(out.EntropyZ) > ShiftZ {
		why = append(why, fmt.Sprintf("the mean entropy is %.3f against %.3f (z = %.1f)", run.EntropyMean, fit.EntropyMean, out.EntropyZ))
	}
	if out.LettersP < ShiftP {
		why = append(why, fmt.Sprintf("the chosen letters are distributed otherwise (chi-square p = %.2g)", out.LettersP))
	}
	out.Shifted, out.Why = len(why) > 0, strings.Join(why, "; ")
	return out
}

// homogeneity is the p-value of Pearson's chi-square test that two count vectors share one
// distribution (positions chosen by no row on either side dropped), by the Wilson–Hilferty
// approximation of the chi-square tail.
func homogeneity(a, b []int) float64 {
	na, nb := 0, 0
	for _, v := range a {
		na += v
	}
	for _, v := range b {
		nb += v
	}
	if na == 0 || nb == 0 {
		return 1
	}
	chi, df := 0.0, -1
	for i := range max(len(a), len(b)) {
		x, y := at(a, i), at(b, i)
		if x+y == 0 {
			continue
		}
		df++
		tot := float64(x + y)
		ea, eb := tot*float64(na)/float64(na+nb), tot*float64(nb)/float64(na+nb)
		chi += (float64(x)-ea)*(float64(x)-ea)/ea + (float64(y)-eb)*(float64(y)-eb)/eb
	}
	if df < 1 {
		return 1
	}
	d := float64(df)
	zz := (math.Cbrt(chi/d) - (1 - 2/(9*d))) / math.Sqrt(2/(9*d))
	return 0.5 * math.Erfc(zz/math.Sqrt2)
}

func at(v []int, i int) int {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// MarshalJSON writes the statistics with their means and spreads.
func (s RowStats) MarshalJSON() ([]byte, error) {
	return json.Marshal(rowStatsJSON{s.Rows, s.K, s.TopMean, s.TopSD, s.EntropyMean, s.EntropySD, s.Letters})
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (s *RowStats) UnmarshalJSON(b []byte) error {
	var j rowStatsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = RowStats{Rows: j.Rows, K: j.K, TopMean: j.TopMean, TopSD: j.TopSD, EntropyMean: j.EntropyMean, EntropySD: j.EntropySD, Letters: j.Letters}
	n := float64(j.Rows)
	s.topSum, s.topSq = j.TopMean*n, (j.TopSD*j.TopSD+j.TopMean*j.TopMean)*n
	s.entropySum, s.entropySq = j.EntropyMean*n, (j.EntropySD*j.EntropySD+j.EntropyMean*j.EntropyMean)*n
	return nil
}
