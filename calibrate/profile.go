package calibrate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/atomicfile"
)

// Format is the format of a profile file, recorded in it.
const Format = "gojev-calibration-v1"

// Scoring names, as profiles key their maps and results name what they were calibrated for:
// the contract and bias control a decision's scores come from. A --permute N decision is
// "permute-N" (N evenly spaced cyclic shifts), "pride+permute-N" with PriDe's prior divided out
// of each shift, and "cyclic" when N reaches the option count.
const (
	ScoringRaw        = "raw"        // direct-options-v1, one decode, no bias control
	ScoringPriDe      = "pride"      // direct, PriDe's prior divided out
	ScoringCyclic     = "cyclic"     // direct, all k cyclic permutations averaged
	ScoringBinary     = "binary"     // binary-candidates-v1, each candidate's p_yes
	ScoringShortlist  = "shortlist"  // a shortlist's distribution over every option (gojev.Shortlist)
	ScoringContextual = "contextual" // binary, p_yes after contextual calibration
	ScoringNoul       = "noul"       // noul-v1, a yes/no question's p_yes (a binary map)
	ScoringReverse    = "reverse"    // direct, a score's rubric read listed and reversed, combined ("pride+reverse": each read debiased first)
)

// ScoringOf names the scoring of one decision: its contract, its bias-control method, how many
// cyclic shifts were averaged (shifts; 0 or 1 for none) of k options, and whether it is a PriDe
// estimation-sample row (scored, as the paper does, by its full cyclic average: still "pride").
func ScoringOf(binary bool, method debias.Method, shifts, k int, priorSample bool) string {
	if binary {
		if method == debias.Contextual {
			return ScoringContextual
		}
		return ScoringBinary
	}
	switch method {
	case debias.PriDe:
		if priorSample || shifts <= 1 {
			return ScoringPriDe
		}
		if shifts >= k {
			return ScoringCyclic // the prior cancels in a full cyclic mean
		}
		return fmt.Sprintf("pride+permute-%d", shifts)
	case debias.Cyclic:
		if shifts >= k {
			return ScoringCyclic
		}
		return fmt.Sprintf("permute-%d", shifts)
	}
	return ScoringRaw
}

// KnockoutScoring names the scoring of a knockout's distribution (a row of more than 16
// options decided in passes) whose passes were scored under passes: "knockout" for raw
// passes, else "<passes>+knockout" ("pride+knockout", "permute-2+knockout").
func KnockoutScoring(passes string) string {
	if passes == ScoringRaw {
		return "knockout"
	}
	return passes + "+knockout"
}

// Errors of profiles, testable with errors.Is.
var (
	// ErrProfile: a profile file cannot be read (bad JSON, another format, a bad map).
	ErrProfile = errors.New("calibrate: bad calibration profile")
	// ErrMismatch: the profile was fitted for another model, prompt version or scoring.
	ErrMismatch = errors.New("calibrate: the profile was fitted for another model, prompt version or scoring")
)

// Source is one results file a profile was fitted from.
type Source struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	Rows   int    `json:"rows"` // labelled decisions read from it
}

// Scoring is what a profile holds for one scoring: the method chosen by cross-validation
// (Choice, with every method's figures), the maps fitted on all the rows, and the fitting
// rows' calibrated confidences and outcomes (Points), from which any error budget's threshold
// is computed (SGR).
type Scoring struct {
	Choice
	Fitted *Fitted `json:"fitted"`
	Points []Point `json:"points"`
	// Fitting are the fitting rows' label-free statistics, to which a run's are compared
	// (Compare: a shift); nil in profiles written before they were kept.
	Fitting *RowStats `json:"fitting_stats,omitempty"`
	// Certified is the ECE the fitting rows certify for the map (NewWith); nil in profiles
	// made by New or written before it existed.
	Certified *Certificate `json:"certified,omitempty"`
}

// Profile is everything estimated once per model and task: a calibration map per scoring, the
// PriDe prior when the fitting runs used one, and where they came from. It is what
// jev calibrate writes and --calibration FILE (Options.Calibration) reads.
type Profile struct {
	Format        string         `json:"format"`
	PromptVersion string         `json:"prompt_version"`
	Model         debias.ModelID `json:"model"`
	// ChatTemplateSHA256 is the sha256 of the chat template the fitting rows were rendered
	// with (a shipped profile's: ShippedProfile checks it); "" when not recorded.
	ChatTemplateSHA256 string `json:"chat_template_sha256,omitempty"`
	// Note says, for a person, how the profile was made and what it holds (a shipped
	// profile's method, tasks and certified range).
	Note       string              `json:"note,omitempty"`
	Scorings   map[string]*Scoring `json:"scorings"`
	Prior      *debias.Prior       `json:"prior,omitempty"`
	Sources    []Source            `json:"sources"`
	References []string            `json:"references"`
	// SHA256 is the sha256 of the profile file as read or written (not stored in it).
	SHA256 string `json:"-"`
	// Skipped names the scorings New left out for too few rows (not stored).
	Skipped []string `json:"-"`
}

// References are the papers a profile's methods follow, recorded in every profile.
var References = []string{
	"Guo et al., On Calibration of Modern Neural Networks, ICML 2017 (temperature scaling, ECE)",
	"Platt, Probabilistic Outputs for Support Vector Machines, 1999 (Platt scaling)",
	"Zadrozny & Elkan, ICML 2001 (histogram binning) and KDD 2002 (isotonic regression)",
	"Geifman & El-Yaniv, Selective Classification for Deep Neural Networks, NeurIPS 2017 (SGR)",
}

// New fits a profile: for each scoring, Choose picks the method by cross-validation, FitAll
// fits it on every row, and the rows' calibrated confidences become the SGR points. samples
// maps a scoring name to its labelled samples. A scoring with too few rows to cross-validate
// (2·folds) is left out and named in Skipped; ErrNoRows when every scoring is.
func New(model debias.ModelID, promptVersion string, samples map[string][]Sample, folds int) (*Profile, error) {
	p := &Profile{Format: Format, PromptVersion: promptVersion, Model: model, Scorings: map[string]*Scoring{}, References: References}
	var skipped []string
	for _, name := range slices.Sorted(maps.Keys(samples)) {
		ss := samples[name]
		ch, err := Choose(ss, folds)
		if errors.Is(err, ErrNoRows) {
			skipped = append(skipped, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("scoring %s: %w", name, err)
		}
		fit, err := FitAll(ch.Method, ss)
		if err != nil {
			return nil, fmt.Errorf("scoring %s: %w", name, err)
		}
		stats := StatsOf(ss)
		sc := &Scoring{Choice: ch, Fitted: fit, Fitting: &stats}
		for _, s := range ss {
			sc.Points = append(sc.Points, s.Point(fit.Apply(s.Scores)))
		}
		p.Scorings[name] = sc
	}
	p.Skipped = skipped
	if len(p.Scorings) == 0 {
		return nil, fmt.Errorf("%w: no scoring has enough rows: %s", ErrNoRows, strings.Join(skipped, "; "))
	}
	return p, nil
}

// Names are the scorings the profile holds, sorted.
func (p *Profile) Names() []string { return slices.Sorted(maps.Keys(p.Scorings)) }

// For returns the profile's entry for a scoring; ErrMismatch names the ones it has.
func (p *Profile) For(scoring string) (*Scoring, error) {
	if sc, ok := p.Scorings[scoring]; ok {
		return sc, nil
	}
	return nil, fmt.Errorf("%w: it holds %s, and these decisions are scored %s: fit one from a results file of this scoring (jev calibrate)",
		ErrMismatch, strings.Join(p.Names(), ", "), scoring)
}

// Check reports ErrMismatch when the profile was fitted for another prompt version, or another
// model file (by sha256, when both are known).
func (p *Profile) Check(model debias.ModelID, promptVersion string) error {
	if p.PromptVersion != promptVersion {
		return fmt.Errorf("%w: prompt_version %q, this run %q", ErrMismatch, p.PromptVersion, promptVersion)
	}
	if p.Model.SHA256 != "" && model.SHA256 != "" && p.Model.SHA256 != model.SHA256 {
		return fmt.Errorf("%w: model %s (sha256 %.12s…), this run %s (sha256 %.12s…)", ErrMismatch,
			p.Model.File, p.Model.SHA256, model.File, model.SHA256)
	}
	return nil
}

// Threshold is the abstention threshold of a scoring for an error budget: SGR over the
// profile's fitting rows (maxError, confidence = 1−δ). Errors: ErrMismatch without that scoring,
// ErrBudget when the budget cannot be met.
func (p *Profile) Threshold(scoring string, maxError, confidence float64) (Threshold, error) {
	sc, err := p.For(scoring)
	if err != nil {
		return Threshold{}, err
	}
	return SGR(sc.Points, maxError, 1-confidence)
}

// SmallestBudget is the smallest error budget a scoring's fitting rows certify at a confidence
// (SmallestBudget over its points): --max-error below it is refused. Errors: ErrMismatch
// without that scoring.
func (p *Profile) SmallestBudget(scoring string, confidence float64) (float64, error) {
	sc, err := p.For(scoring)
	if err != nil {
		return 0, err
	}
	return SmallestBudget(sc.Points, 1-confidence)
}

// validate checks the format and every map.
func (p *Profile) validate() error {
	if p.Format != Format {
		return fmt.Errorf("%w: format %q, want %q", ErrProfile, p.Format, Format)
	}
	if len(p.Scorings) == 0 {
		return fmt.Errorf("%w: no scorings", ErrProfile)
	}
	for name, sc := range p.Scorings {
		if sc == nil || sc.Fitted == nil {
			return fmt.Errorf("%w: scoring %s has no fitted map", ErrProfile, name)
		}
		if sc.Method != sc.Fitted.Method || !slices.Contains(Methods, sc.Method) {
			return fmt.Errorf("%w: scoring %s: method %q, fitted %q", ErrProfile, name, sc.Method, sc.Fitted.Method)
		}
		all := []Map{sc.Fitted.Pooled}
		for _, k := range slices.Sorted(maps.Keys(sc.Fitted.ByOptions)) {
			all = append(all, sc.Fitted.ByOptions[k])
		}
		for _, m := range all {
			if err := m.Check(); err != nil {
				return fmt.Errorf("%w: scoring %s: %w", ErrProfile, name, err)
			}
		}
	}
	return nil
}

// Read decodes and validates a profile, setting SHA256 to the sha256 of the bytes read.
// Errors wrap ErrProfile.
func Read(r io.Reader) (*Profile, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var p Profile
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrProfile, err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(b)
	p.SHA256 = hex.EncodeToString(sum[:])
	return &p, nil
}

// Load reads a profile file (Read); a missing file wraps fs.ErrNotExist.
func Load(path string) (*Profile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Marshal is the profile as indented JSON (with a final newline).
func (p *Profile) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Save writes the profile to path atomically (a crash leaves the old file or the new one: a
// synced temporary file renamed, the folder synced) and sets SHA256.
func (p *Profile) Save(path string) error {
	b, err := p.Marshal()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b); err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	p.SHA256 = hex.EncodeToString(sum[:])
	return nil
}
