package calibrate

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/gojev/gojev/debias"
)

// Calibration from a handful of labelled rows: below FewRows rows a scoring is calibrated by a
// temperature shrunk toward a prior value (FitShrunk) instead of the method cross-validation
// would choose among Methods, whose choice that few rows cannot support; every scoring states
// the ECE its rows certify (Certify).

// FewRows is the number of rows below which New fits a shrunk temperature (Config.ShrinkToward)
// instead of choosing among Methods by cross-validation.
const FewRows = 100

// DefaultPriorSD is the spread of the shrunk temperature's prior, on log T: one e-fold either
// side of its center (T0/2.7 to 2.7·T0) is one standard deviation.
const DefaultPriorSD = 1.0

// FewRowsUsable is the fewest labelled rows measured to give a usable temperature on every
// pool task of 5-16 options (held-out ECE ≤ 0.10: docs/calibration.md); jev calibrate says so
// below it.
const FewRowsUsable = 40

// The fewest labelled rows a scoring is fitted on is 2·folds, the fewest that can be
// cross-validated into a bound (Certify): a temperature from so few rows stays near its prior,
// and the bound stated with it is wide, which is what a user with a handful of labels should
// read.

// Config configures NewWith.
type Config struct {
	// Folds is the cross-validation's folds (0: DefaultFolds).
	Folds int
	// ShrinkToward is, per scoring, the temperature a scoring of fewer than FewRows rows is
	// shrunk toward (missing: 1, the scores as they are): a shipped or pooled value for the same
	// model and scoring.
	ShrinkToward map[string]float64
	// PriorSD is the prior's spread of log T (0: DefaultPriorSD).
	PriorSD float64
	// Confidence is the certified bound's confidence (0: 0.9).
	Confidence float64
}

// FitShrunk fits a temperature to few labelled samples: the maximum a posteriori temperature
// under a Gaussian prior on log T centered at log t0 with spread sd, minimising
// n·NLL(T) + (log T − log t0)² / (2·sd²). With many rows it is the plain temperature (Fit); with
// few it stays near t0, where the maximum-likelihood temperature of 10 or 20 rows swings by a
// factor of several. Direct samples use softmax(scores/T); binary ones σ(logit(p_yes)/T). The
// map is a Temperature map; Map.Shrink records the prior. Errors: ErrNoRows for fewer than 2
// samples, ErrMethod for t0 or sd not positive.
func FitShrunk(samples []Sample, t0, sd float64) (Map, error) {
	if len(samples) < 2 {
		return Map{}, fmt.Errorf("%w: %d rows to fit a temperature", ErrNoRows, len(samples))
	}
	if !(t0 > 0) || !(sd > 0) {
		return Map{}, fmt.Errorf("%w: a shrunk temperature needs t0 > 0 and sd > 0, got %g and %g", ErrMethod, t0, sd)
	}
	n := float64(len(samples))
	binary := samples[0].Binary
	var x []float64
	var y []bool
	if binary {
		x, y = candidates(samples)
	}
	penalty := func(beta float64) float64 {
		d := -math.Log(beta) - math.Log(t0) // log T − log t0, T = 1/β
		return d * d / (2 * sd * sd)
	}
	var beta float64
	if binary {
		beta = fitScale(func(beta float64) float64 {
			return n*binaryNLL(x, y, func(p float64) float64 { return sigmoid(beta * logit(p)) }) + penalty(beta)
		})
	} else {
		beta = fitScale(func(beta float64) float64 { return n*softmaxNLL(samples, beta) + penalty(beta) })
	}
	return Map{Method: Temperature, Binary: binary, T: 1 / beta, Rows: len(samples), Shrink: &Shrink{T0: t0, SD: sd}}, nil
}

// Shrink is the prior a temperature fitted on few rows was shrunk toward (FitShrunk).
type Shrink struct {
	T0 float64 `json:"t0"`
	SD float64 `json:"sd_log_t"`
}

// Certificate is the ECE a scoring's rows certify for the map fitted on them: the
// cross-validated ECE (each fold calibrated by the map fitted, the same way, on the other
// folds) and Bound, the Confidence quantile of its bootstrap distribution over the rows. A run
// whose rows are drawn like the fitting rows should see an ECE at most Bound, with about that
// confidence; a small fitting set gives a wide bound, which is the point of stating it.
type Certificate struct {
	Rows       int     `json:"rows"`
	Folds      int     `json:"folds"`
	ECE        float64 `json:"cross_validated_ece"`
	Bound      float64 `json:"bound"`
	Confidence float64 `json:"confidence"`
}

// Certify computes a Certificate for samples calibrated by fit (the same fitting NewWith used
// on all of them), with folds folds and 1000 bootstrap resamples of the out-of-fold
// calibrated rows (seeded: the same rows give the same bound). Errors: ErrNoRows for fewer than
// 2·folds rows, and fit's.
func Certify(samples []Sample, fit func([]Sample) (*Fitted, error), folds int, confidence float64) (Certificate, error) {
	if len(samples) < 2*folds {
		return Certificate{}, fmt.Errorf("%w: %d rows for %d folds", ErrNoRows, len(samples), folds)
	}
	probs, err := outOfFold(samples, folds, fit)
	if err != nil {
		return Certificate{}, err
	}
	conf := make([]float64, len(samples))
	right := make([]bool, len(samples))
	for i, s := range samples {
		c := s.Chosen()
		conf[i], right[i] = probs[i][c], c == s.Label
	}
	_, cv := Reliability(conf, right)
	rng := rand.New(rand.NewPCG(1, uint64(len(samples))))
	const boots = 1000
	eces := make([]float64, boots)
	bc, br := make([]float64, len(samples)), make([]bool, len(samples))
	for b := range eces {
		for i := range bc {
			j := rng.IntN(len(samples))
			bc[i], br[i] = conf[j], right[j]
		}
		_, eces[b] = Reliability(bc, br)
	}
	sort.Float64s(eces)
	q := eces[min(boots-1, int(math.Ceil(confidence*boots))-1)]
	return Certificate{Rows: len(samples), Folds: folds, ECE: cv, Bound: q, Confidence: confidence}, nil
}

// NewWith fits a profile as New does, and: a scoring of fewer than FewRows rows is calibrated
// by a temperature shrunk toward cfg.ShrinkToward (FitShrunk) rather than by the method
// cross-validation would choose; fewer than 2·folds rows leave a scoring out (Skipped); every
// scoring gets its Certificate. Errors are New's.
func NewWith(model debias.ModelID, promptVersion string, samples map[string][]Sample, cfg Config) (*Profile, error) {
	if cfg.Folds <= 0 {
		cfg.Folds = DefaultFolds
	}
	if cfg.PriorSD <= 0 {
		cfg.PriorSD = DefaultPriorSD
	}
	if cfg.Confidence <= 0 {
		cfg.Confidence = 0.9
	}
	many, few := map[string][]Sample{}, map[string][]Sample{}
	var skipped []string
	for name, ss := range samples {
		switch {
		case len(ss) < 2*cfg.Folds:
			skipped = append(skipped, fmt.Sprintf("%s (%d rows: at least %d for %d folds)", name, len(ss), 2*cfg.Folds, cfg.Folds))
		case len(ss) < FewRows:
			few[name] = ss
		default:
			many[name] = ss
		}
	}
	p := &Profile{Format: Format, PromptVersion: promptVersion, Model: model, Scorings: map[string]*Scoring{}, References: References}
	if len(many) > 0 {
		full, err := New(model, promptVersion, many, cfg.Folds)
		if err != nil && !errors.Is(err, ErrNoRows) {
			return nil, err
		}
		if full != nil {
			p.Scorings, skipped = full.Scorings, append(skipped, full.Skipped...)
		}
	}
	for name, ss := range few {
		t0 := cfg.ShrinkToward[name]
		if !(t0 > 0) {
			t0 = 1
		}
		fit := func(s []Sample) (*Fitted, error) {
			m, err := FitShrunk(s, t0, cfg.PriorSD)
			if err != nil {
				return nil, err
			}
			return &Fitted{Method: Temperature, Pooled: m}, nil
		}
		f, err := fit(ss)
		if err != nil {
			return nil, fmt.Errorf("scoring %s: %w", name, err)
		}
		probs, err := outOfFold(ss, cfg.Folds, fit)
		if err != nil {
			return nil, fmt.Errorf("scoring %s: %w", name, err)
		}
		stats := StatsOf(ss)
		sc := &Scoring{Fitted: f, Fitting: &stats, Choice: Choice{Method: Temperature, Before: Uncalibrated(ss), Folds: cfg.Folds,
			CV:     map[Method]Metrics{Temperature: Score(ss, probs)},
			Reason: fmt.Sprintf("%d rows, fewer than %d: a temperature shrunk toward %.3g (a Gaussian prior on log T, sd %.2g), not a choice among methods", len(ss), FewRows, t0, cfg.PriorSD)}}
		for _, s := range ss {
			sc.Points = append(sc.Points, s.Point(f.Apply(s.Scores)))
		}
		p.Scorings[name] = sc
	}
	for _, name := range slices.Sorted(maps.Keys(p.Scorings)) {
		sc := p.Scorings[name]
		fit := func(s []Sample) (*Fitted, error) {
			if sc.Fitted.Pooled.Shrink != nil {
				m, err := FitShrunk(s, sc.Fitted.Pooled.Shrink.T0, sc.Fitted.Pooled.Shrink.SD)
				return &Fitted{Method: Temperature, Pooled: m}, err
			}
			return FitAll(sc.Method, s)
		}
		cert, err := Certify(samples[name], fit, cfg.Folds, cfg.Confidence)
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("%s: no certificate (%v)", name, err))
			continue
		}
		sc.Certified = &cert
	}
	slices.Sort(skipped)
	p.Skipped = skipped
	if len(p.Scorings) == 0 {
		return nil, fmt.Errorf("%w: no scoring has enough rows: %s", ErrNoRows, strings.Join(skipped, "; "))
	}
	return p, nil
}
