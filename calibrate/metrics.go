package calibrate

import (
	"fmt"
	"math"
	"slices"
)

// ECEBins is the number of equal-width confidence bins of the expected calibration error and
// the reliability diagram (Guo et al. 2017, section 2).
const ECEBins = 10

// Bin is one bin of a reliability diagram: the decisions whose probability fell in [Low, High).
type Bin struct {
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
	Count      int     `json:"count"`
	Confidence float64 `json:"confidence"` // mean probability in the bin
	Accuracy   float64 `json:"accuracy"`   // share right in the bin
}

// Reliability bins decisions by the probability given to their choice (conf) into ECEBins
// equal-width bins and returns the bins and the expected calibration error, Σ_b (n_b/n) ·
// |accuracy_b − confidence_b| (Guo et al. 2017, eq. 3); 0 bins filled gives ECE 0.
func Reliability(conf []float64, right []bool) ([]Bin, float64) {
	bins := make([]Bin, ECEBins)
	for i := range bins {
		bins[i].Low, bins[i].High = float64(i)/ECEBins, float64(i+1)/ECEBins
	}
	for i, p := range conf {
		b := min(max(int(p*ECEBins), 0), ECEBins-1)
		bins[b].Count++
		bins[b].Confidence += p
		if right[i] {
			bins[b].Accuracy++
		}
	}
	ece := 0.0
	for i := range bins {
		if n := float64(bins[i].Count); n > 0 {
			bins[i].Confidence /= n
			bins[i].Accuracy /= n
			ece += n / float64(len(conf)) * math.Abs(bins[i].Accuracy-bins[i].Confidence)
		}
	}
	return bins, ece
}

// AUROC is the area under the ROC curve of scores that should rank the positives (pos) above
// the negatives (neg): the Mann–Whitney estimate of P(a positive scores above a negative) over
// every pair, ties counted half (Hanley & McNeil 1982). 0.5 is chance; 0 when either side is
// empty.
func AUROC(pos, neg []float64) float64 {
	if len(pos) == 0 || len(neg) == 0 {
		return 0
	}
	wins := 0.0
	for _, x := range pos {
		for _, y := range neg {
			switch {
			case x > y:
				wins++
			case x == y:
				wins += 0.5
			}
		}
	}
	return wins / float64(len(pos)*len(neg))
}

// Brier is one decision's multi-class Brier score, Σ_i (probs_i − y_i)² with y the one-hot
// label (Brier 1950): 0 for certainty on the label, 2 for certainty on another option.
func Brier(probs []float64, label int) float64 {
	total := 0.0
	for i, p := range probs {
		y := 0.0
		if i == label {
			y = 1
		}
		total += (p - y) * (p - y)
	}
	return total
}

// Metrics are a set of probabilistic decisions scored against their labels.
type Metrics struct {
	Rows int `json:"rows"`
	// Accuracy is the share of rows whose chosen option is the label.
	Accuracy float64 `json:"accuracy"`
	// ECE is the expected calibration error of the chosen option's probability (Reliability).
	ECE float64 `json:"ece"`
	// NLL is the mean negative log-likelihood: direct, −log of the label's probability; binary,
	// the mean over candidates of the log loss of p_yes against "is the gold candidate".
	NLL float64 `json:"nll"`
	// Brier is the mean over rows of Σ_i (p_i − y_i)² over the options, y the one-hot label
	// (Brier 1950's multi-class score: 0 is perfect, 2 the worst); binary, over the candidates'
	// p_yes.
	Brier float64 `json:"brier"`
	// MeanConfidence is the mean probability of the chosen options.
	MeanConfidence float64 `json:"mean_confidence"`
}

// Score computes Metrics for labelled samples with their probabilities probs[i] (row order,
// as Map.Apply returns them, or Sample.Probabilities uncalibrated). The choice is each
// sample's Chosen, whatever probs say.
func Score(samples []Sample, probs [][]float64) Metrics {
	m := Metrics{Rows: len(samples)}
	if len(samples) == 0 {
		return m
	}
	conf := make([]float64, len(samples))
	right := make([]bool, len(samples))
	for i, s := range samples {
		c := s.Chosen()
		conf[i], right[i] = probs[i][c], c == s.Label
		if right[i] {
			m.Accuracy++
		}
		m.MeanConfidence += conf[i]
		m.Brier += Brier(probs[i], s.Label)
		if s.Binary {
			for j, p := range probs[i] {
				m.NLL += logLoss(p, j == s.Label) / float64(len(probs[i]))
			}
		}
		if !s.Binary {
			m.NLL -= math.Log(clamp(probs[i][s.Label]))
		}
	}
	n := float64(len(samples))
	m.Accuracy /= n
	m.MeanConfidence /= n
	m.Brier /= n
	m.NLL /= n
	_, m.ECE = Reliability(conf, right)
	return m
}

// Uncalibrated scores the samples' own probabilities.
func Uncalibrated(samples []Sample) Metrics {
	probs := make([][]float64, len(samples))
	for i, s := range samples {
		probs[i] = s.Probabilities()
	}
	return Score(samples, probs)
}

// MinRowsPerK is the fewest rows of one option count that get a map of their own; rows of a
// count with fewer share the map fitted on every row (Fitted.Pooled).
const MinRowsPerK = 50

// Fitted is one method fitted to a set of samples: a map per option count k with at least
// MinRowsPerK rows, and a pooled map for every other k. With Only (a shipped profile's
// option-count bands, ShippedProfile), the counts in ByOptions are the only ones calibrated.
type Fitted struct {
	Method    Method      `json:"method"`
	Pooled    Map         `json:"pooled"`
	ByOptions map[int]Map `json:"by_options,omitempty"`
	Only      bool        `json:"only_by_options,omitempty"`
}

// For returns the map for a row of k options (its own, else the pooled one) and the k it was
// fitted for (0: pooled).
func (f *Fitted) For(k int) (Map, int) {
	if m, ok := f.ByOptions[k]; ok {
		return m, k
	}
	return f.Pooled, 0
}

// Covers reports whether rows of k options are calibrated: always, unless Only is set and k
// has no map of its own.
func (f *Fitted) Covers(k int) bool {
	_, ok := f.ByOptions[k]
	return ok || !f.Only
}

// Apply calibrates one decision (Map.Apply with the map for its option count); a count the
// Fitted does not cover keeps its uncalibrated probabilities (Sample.Probabilities).
func (f *Fitted) Apply(scores []float64) []float64 {
	if !f.Covers(len(scores)) {
		return Sample{Scores: scores}.Probabilities()
	}
	m, _ := f.For(len(scores))
	return m.Apply(scores)
}

// FitAll fits method on the samples: pooled, and per option count where MinRowsPerK rows allow.
func FitAll(method Method, samples []Sample) (*Fitted, error) {
	pooled, err := Fit(method, samples)
	if err != nil {
		return nil, err
	}
	f := &Fitted{Method: method, Pooled: pooled}
	byK := map[int][]Sample{}
	for _, s := range samples {
		byK[len(s.Scores)] = append(byK[len(s.Scores)], s)
	}
	if len(byK) > 1 {
		for k, ss := range byK {
			if len(ss) < MinRowsPerK {
				continue
			}
			m, err := Fit(method, ss)
			if err != nil {
				return nil, err
			}
			if f.ByOptions == nil {
				f.ByOptions = map[int]Map{}
			}
			f.ByOptions[k] = m
		}
	}
	return f, nil
}

// DefaultFolds is the number of folds CrossValidate uses by default.
const DefaultFolds = 5

// CrossValidate scores method by k-fold cross-validation: sample i is in fold i mod folds
// (interleaved, so a file sorted by label still spreads over the folds); each fold is
// calibrated by the map fitted on the other folds, and the out-of-fold probabilities of every
// sample are scored together. Errors: ErrNoRows when a fold's training part has fewer than 2
// rows.
func CrossValidate(method Method, samples []Sample, folds int) (Metrics, error) {
	if folds < 2 {
		return Metrics{}, fmt.Errorf("%w: %d folds: cross-validation needs at least 2 (--folds)", ErrMethod, folds)
	}
	if len(samples) < 2*folds {
		return Metrics{}, fmt.Errorf("%w: %d rows for %d folds (at least %d; fewer --folds need fewer rows)", ErrNoRows, len(samples), folds, 2*folds)
	}
	probs, err := outOfFold(samples, folds, func(s []Sample) (*Fitted, error) { return FitAll(method, s) })
	if err != nil {
		return Metrics{}, err
	}
	return Score(samples, probs), nil
}

// outOfFold calibrates sample i (in fold i mod folds) by the map fit returns for the other
// folds, and returns every sample's out-of-fold probabilities. Errors are fit's.
func outOfFold(samples []Sample, folds int, fit func([]Sample) (*Fitted, error)) ([][]float64, error) {
	probs := make([][]float64, len(samples))
	for f := range folds {
		var train []Sample
		for i, s := range samples {
			if i%folds != f {
				train = append(train, s)
			}
		}
		m, err := fit(train)
		if err != nil {
			return nil, err
		}
		for i := f; i < len(samples); i += folds {
			probs[i] = m.Apply(samples[i].Scores)
		}
	}
	return probs, nil
}

// Choice is the method chosen among Methods, with the cross-validated figures of each.
type Choice struct {
	Method Method             `json:"method"`
	Reason string             `json:"reason"`
	Before Metrics            `json:"before"`
	CV     map[Method]Metrics `json:"cross_validated"`
	Folds  int                `json:"folds"`
}

// Choose cross-validates every method and chooses the one with the lowest cross-validated
// Brier score: Brier is a proper scoring rule, so it rewards probabilities that are both
// calibrated and sharp, where ECE alone can be zeroed by a map that says the mean accuracy to
// every row; and unlike NLL it is not dominated by a few confident mistakes. Ties (within
// 0.001) go to the method listed first in Methods, the one with fewer parameters.
func Choose(samples []Sample, folds int) (Choice, error) {
	ch := Choice{Before: Uncalibrated(samples), CV: map[Method]Metrics{}, Folds: folds}
	for _, m := range Methods {
		cv, err := CrossValidate(m, samples, folds)
		if err != nil {
			return Choice{}, err
		}
		ch.CV[m] = cv
		if ch.Method == "" || cv.Brier < ch.CV[ch.Method].Brier-0.001 {
			ch.Method = m
		}
	}
	ranked := slices.Clone(Methods)
	slices.SortStableFunc(ranked, func(a, b Method) int {
		switch {
		case ch.CV[a].Brier < ch.CV[b].Brier:
			return -1
		case ch.CV[a].Brier > ch.CV[b].Brier:
			return 1
		}
		return 0
	})
	ch.Reason = fmt.Sprintf("lowest %d-fold cross-validated Brier score (%.4f; next %s %.4f); ECE %.3f → %.3f",
		folds, ch.CV[ch.Method].Brier, ranked[1], ch.CV[ranked[1]].Brier, ch.Before.ECE, ch.CV[ch.Method].ECE)
	if ranked[0] != ch.Method {
		ch.Reason = fmt.Sprintf("within 0.001 of the lowest %d-fold cross-validated Brier score (%s %.4f) with fewer parameters; ECE %.3f → %.3f",
			folds, ranked[0], ch.CV[ranked[0]].Brier, ch.Before.ECE, ch.CV[ch.Method].ECE)
	}
	return ch, nil
}
