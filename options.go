package gojev

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/knockout"
	"github.com/gojev/gojev/llama"
)

// Row is one decision: evidence (State), a criterion (Question) and 1..256 options (package
// contract documents the fields; more than 16 are decided as KnockoutOptions says: by
// shortlist, under the binary contract or by knockout). State may be any value encoding/json can marshal; it is
// embedded in the prompt as Python's json.dumps would write it, with struct fields in
// declaration order and the key order of rows read by contract.ParseRow.
type Row = contract.Row

// Option is one listed option of a Row: an id (returned as Result.Chosen) and the description
// the model reads.
type Option = contract.Option

// Contract selects the prompt contract a Decider serves.
type Contract int

const (
	// Direct is direct-options-v1: one prompt per row, answer letters A..P.
	Direct Contract = iota
	// Binary is binary-candidates-v1: one yes/no prompt per option, ranked by p_yes.
	Binary
	// Guarded is direct-options-guarded-v1: Direct's prompt with the seed's guard sentence
	// against instructions in the evidence in its system text (contract.GuardedSystem), and
	// nothing else changed. Opt-in; Direct stays the seed's.
	Guarded
	// Spotlight is direct-options-spotlight-v1: Direct's prompt with the evidence datamarked
	// (contract.Datamark: every space "^") and the datamarking sentence in the system text
	// (contract.SpotlightSystem), after Hines et al., "Defending Against Indirect Prompt
	// Injection Attacks With Spotlighting" (2024). Opt-in; Direct stays the seed's.
	Spotlight
)

// lettered reports whether the contract answers with option letters (Direct, Guarded,
// Spotlight).
func (c Contract) lettered() bool { return c == Direct || c == Guarded || c == Spotlight }

// String returns the contract's prompt_version.
func (c Contract) String() string {
	switch c {
	case Direct:
		return contract.PromptVersion
	case Binary:
		return contract.BinaryPromptVersion
	case Guarded:
		return contract.GuardedPromptVersion
	case Spotlight:
		return contract.SpotlightPromptVersion
	}
	return fmt.Sprintf("Contract(%d)", int(c))
}

// Errors of a Decider, testable with errors.Is. Row errors also wrap the contract's
// (contract.ErrRow, contract.ErrBoundary, ...) and the runtime's (backend.ErrPromptTooLong,
// backend.ErrSpecialText, backend.ErrHTTP, llama.ErrDecode); a cancelled request wraps its
// context's error; a request on a closed Decider wraps ErrClosed.
var (
	// ErrOptions: an Options field is out of range, or a bias-control method does not apply
	// to the contract. backend.ErrOptions is wrapped for the in-process settings.
	ErrOptions = errors.New("gojev: invalid options")
	// ErrNoCgo: Open needs cgo (the in-process runtime links llama.cpp); this binary was built
	// with CGO_ENABLED=0. New with backend.NewHTTP works without it.
	ErrNoCgo = errors.New("gojev: built without cgo: the in-process runtime is not available")
	// ErrClosed: a request on a Decider after Close, or one Close stopped. It is the cgo
	// package's llama.ErrClosed (the same value), so a program that decides over HTTP tests
	// for it without importing package llama.
	ErrClosed = llama.ErrClosed
)

// Options configure a Decider. The zero value is the measured best at about the raw cost: the
// direct contract, PriDe wherever a prior is at hand (debias.Default), rows of more than 16
// options by shortlist where the runtime reads hidden states (ManyShortlist, else ManyBinary:
// KnockoutOptions), the model's own chat template and
// llama.cpp's defaults.
type Options struct {
	// Contract is the prompt contract every row is decided under (default Direct).
	Contract Contract
	// Debias is the bias control every row gets (package debias); the prompts never change:
	// debias.Default (the zero value: PriDe under the direct contracts wherever a prior for
	// the row's option count is at hand, from Prior, a Calibration profile's, SetPrior,
	// or the stored priors, debias.DefaultStore, which Open reads; else the raw scores);
	// debias.None (the raw scores only); debias.PriDe (Direct: one decode per row, debiased
	// with the letter prior for its option count, an error without one); debias.Cyclic
	// (Direct: every row under all k cyclic permutations of its options); debias.Contextual
	// (Binary: each candidate's p_yes calibrated against content-free evidence, three extra
	// prompts per question and candidate, cached).
	Debias debias.Method
	// Prior is PriDe's letter prior (a prior file, debias.LoadPrior), used under debias.PriDe.
	// Without one, a Calibration profile's prior is used.
	Prior *debias.Prior
	// Permute is how many evenly spaced cyclic shifts of its options (debias.Shifts) each row
	// is decided under, their log-probabilities averaged per option: under debias.Cyclic, 0
	// (or any n ≥ k) means all k; under debias.PriDe, n > 1 divides the prior out of each
	// shift before averaging (0 or 1: one decode). Cost: n decodes a row, sharing their prefix.
	Permute int
	// Calibration is a calibration profile (calibrate.Load; jev calibrate writes one). Each
	// Result's Probability then follows the profile's map for the row's scoring
	// (Options.Scoring), Result.Calibration records it with every option's calibrated
	// probability, and the raw fields and the choice stay as they are. New refuses a profile
	// of another prompt version or without the Decider's scoring (calibrate.ErrMismatch); the
	// model is the caller's to check (Profile.Check with the model's sha256), as for a Prior.
	Calibration *calibrate.Profile
	// QuestionCalibration calibrates the answers to particular questions (Ask): a profile whose
	// scorings are each one question's (calibrate.QuestionScoring of its QuestionSHA256; jev
	// calibrate fits them from typed rows' records, calibrate.LoadQuestions reads a folder of
	// them). An answer to a question it holds is calibrated by that question's map, before
	// and instead of Calibration (or the shipped profile); every other answer and row is
	// finished as without it. Refused (ErrOptions, calibrate.ErrMismatch): a profile with other
	// scorings, or of another prompt version.
	QuestionCalibration *calibrate.Profile
	// AbstainBelow marks every Result whose Probability (calibrated, with a Calibration) is
	// below it as Abstained, keeping its choice; 0 abstains on nothing. Profile.Threshold
	// gives the threshold that keeps the error rate of the rows answered (not abstained) within a budget.
	AbstainBelow float64
	// Detect asks the model, for every row, whether its evidence tries to dictate the decision
	// (contract.DetectMessages, prompt_version injection-check-v1: one more yes/no prompt a
	// row, of the evidence alone), and records the answer in Result.Suspect. A row is flagged
	// when p_yes ≥ DetectThreshold (0 means 0.5); AbstainOnSuspect makes a flagged row
	// abstain. The decision's own prompts and scores do not change.
	Detect           bool
	DetectThreshold  float64
	AbstainOnSuspect bool
	// Knockout configures how rows of 17 to 256 options are decided under the direct
	// contract (KnockoutOptions; the zero value decides them by shortlist where the runtime
	// reads hidden states, else under the binary contract).
	Knockout KnockoutOptions
	// ScoreReading is how a Score question's rubric is read (Ask): ReadBothOrders (the zero
	// value's meaning) decides its levels listed and reversed and combines the two reads
	// (Decider.combineReversed; twice a listed read's prompts, sharing their prefix), each read
	// raw unless Debias is debias.PriDe; ReadListed decides the listed levels once, under Debias
	// as a row. Cyclic shifts (debias.Cyclic, Permute) read a score as a row. Choice questions
	// and rows are not affected.
	ScoreReading ScoreReading

	// Runtime configures the in-process runtime Open creates: llama.cpp's n_ctx, n_batch,
	// n_threads, n_gpu_layers, the renderer, the chat template and its kwargs, plugins, the
	// decode mode (backend.InProcessOptions documents each field and its default; the zero
	// value is every default). New takes a runtime already configured and ignores it.
	Runtime backend.InProcessOptions
}

// check validates the decision options. Errors wrap ErrOptions.
func (o Options) check() error {
	switch o.Contract {
	case Direct, Binary, Guarded, Spotlight:
	default:
		return fmt.Errorf("%w: unknown contract %d", ErrOptions, int(o.Contract))
	}
	switch {
	case o.Debias == debias.Default || o.Debias == debias.None:
	case (o.Debias == debias.PriDe || o.Debias == debias.Cyclic) && o.Contract.lettered():
	case o.Debias == debias.Contextual && o.Contract == Binary:
	default:
		return fmt.Errorf("%w: debias method %q does not apply to %s (pride and cyclic: direct; contextual: binary)",
			ErrOptions, o.Debias, o.Contract)
	}
	if o.Permute < 0 || (o.Permute > 1 && o.Debias != debias.Cyclic && o.Debias != debias.PriDe) {
		return fmt.Errorf("%w: Permute %d needs debias.Cyclic or debias.PriDe (direct contract)", ErrOptions, o.Permute)
	}
	if r := o.ScoreReading; r != "" && r != ReadBothOrders && r != ReadListed {
		return fmt.Errorf("%w: ScoreReading %q: want %q or %q", ErrOptions, r, ReadBothOrders, ReadListed)
	}
	if m := o.Knockout.Method; m != "" && m != ManyBinary && m != ManyKnockout && m != ManyShortlist {
		return fmt.Errorf("%w: Knockout.Method %q: want %q, %q or %q", ErrOptions, m, ManyBinary, ManyKnockout, ManyShortlist)
	}
	if k := o.Knockout.Shortlist; k != 0 && (k < 2 || k > contract.MaxOptions) {
		return fmt.Errorf("%w: Knockout.Shortlist %d: want 2 to %d options kept", ErrOptions, k, contract.MaxOptions)
	}
	if g := o.Knockout.Grouping; g != "" && !slices.Contains(knockout.Groupings, g) {
		return fmt.Errorf("%w: Knockout.Grouping %q: want one of %v", ErrOptions, g, knockout.Groupings)
	}
	if !(o.DetectThreshold >= 0 && o.DetectThreshold <= 1) {
		return fmt.Errorf("%w: DetectThreshold %v is not a probability", ErrOptions, o.DetectThreshold)
	}
	if o.AbstainOnSuspect && !o.Detect {
		return fmt.Errorf("%w: AbstainOnSuspect needs Detect", ErrOptions)
	}
	if !(o.AbstainBelow >= 0 && o.AbstainBelow <= 1) {
		return fmt.Errorf("%w: AbstainBelow %v is not a probability", ErrOptions, o.AbstainBelow)
	}
	if p := o.Calibration; p != nil {
		if err := o.CheckProfile(p); err != nil {
			return fmt.Errorf("%w: %w", ErrOptions, err)
		}
	}
	if p := o.QuestionCalibration; p != nil {
		switch {
		case !p.Questions():
			return fmt.Errorf("%w: QuestionCalibration holds %s: %w: only question:<sha256> scorings (calibrate.QuestionScoring)", ErrOptions, strings.Join(p.Names(), ", "), calibrate.ErrMismatch)
		case p.PromptVersion != o.Contract.String():
			return fmt.Errorf("%w: QuestionCalibration was fitted on %s answers, and this Decider decides under %s: %w", ErrOptions, p.PromptVersion, o.Contract, calibrate.ErrMismatch)
		}
	}
	return nil
}

// CheckProfile reports whether a calibration profile serves these options: fitted on their
// prompt version, with a map for their scoring (ProfileScoring). Errors wrap
// calibrate.ErrMismatch, or are p.For's.
func (o Options) CheckProfile(p *calibrate.Profile) error {
	o = o.following(p)
	if p.PromptVersion != o.Contract.String() {
		return fmt.Errorf("%w: it was fitted on %s decisions, and this run decides under %s", calibrate.ErrMismatch, p.PromptVersion, o.Contract)
	}
	_, err := p.For(o.ProfileScoring(p))
	return err
}

// following is o with its bias control following a calibration profile: under debias.Default,
// a profile with a map for the raw scores (of rows or knockouts) and none for PriDe's makes every row raw
// (debias.None), so that the profile serves every row. Other options are o.
func (o Options) following(p *calibrate.Profile) Options {
	if o.Debias != debias.Default || p == nil || !o.Contract.lettered() {
		return o
	}
	holds := func(scorings ...string) bool {
		for _, s := range scorings {
			if _, err := p.For(s); err == nil {
				return true
			}
		}
		return false
	}
	pride, raw := calibrate.ScoringPriDe, calibrate.ScoringRaw
	if !holds(pride, calibrate.KnockoutScoring(pride)) && holds(raw, calibrate.KnockoutScoring(raw)) {
		o.Debias = debias.None
	}
	return o
}

// Scorings names the scorings these options give results: rows of at most 16 options
// (Scoring(0)) and, under a lettered contract, knockout rows of more (Scoring(17)).
func (o Options) Scorings() []string {
	out := []string{o.Scoring(0)}
	if o.Contract.lettered() {
		out = append(out, o.Scoring(contract.MaxOptions+1))
	}
	return out
}

// ProfileScoring is the first of Scorings that a calibration profile holds, else Scoring(0):
// the scoring whose map and abstention threshold a run with these options reads (a profile
// fitted on knockout rows serves knockout rows).
func (o Options) ProfileScoring(p *calibrate.Profile) string {
	o = o.following(p)
	for _, s := range o.Scorings() {
		if _, err := p.For(s); err == nil {
			return s
		}
	}
	return o.Scoring(0)
}

// Scoring names the scores a row of k options gets under these options, as calibration
// profiles key their maps (calibrate.ScoringOf): "raw", "pride", "cyclic", "permute-N",
// "pride+permute-N", "binary" or "contextual"; a row of more than 16 options under the direct
// contract is a knockout, "knockout" or "<the passes' scoring>+knockout"
// (calibrate.KnockoutScoring). k = 0 names the scoring of rows with more options than Permute
// (and at most 16).
func (o Options) Scoring(k int) string {
	if k > contract.MaxOptions && o.Contract.lettered() {
		switch o.Knockout.Method {
		case ManyKnockout:
			return calibrate.KnockoutScoring(o.Scoring(contract.MaxOptions))
		case ManyBinary:
			return calibrate.ScoringBinary
		}
		return calibrate.ScoringShortlist // ManyShortlist, and the default on an in-process runtime
	}
	if k <= 0 {
		k = math.MaxInt32
	}
	shifts := o.Permute
	if o.Debias == debias.Cyclic && (shifts == 0 || shifts > k) {
		shifts = k
	}
	method := o.Debias
	if method == debias.Default && o.Contract.lettered() {
		method = debias.PriDe // where a prior is at hand: the scoring a profile is fitted for
	}
	return calibrate.ScoringOf(o.Contract == Binary, method, shifts, k, false)
}

// manyBinary reports whether rows of more than 16 options are decided under the binary
// contract (KnockoutOptions.Method, settled by New).
func (o Options) manyBinary() bool {
	return o.Knockout.Method == ManyBinary
}

// settleMany is o with the default KnockoutOptions.Method ("") settled for a runtime:
// ManyShortlist where it reads hidden states (backend.Embedder), else ManyBinary.
func (o Options) settleMany(rt backend.Backend) Options {
	if o.Knockout.Method == "" {
		o.Knockout.Method = ManyBinary
		if _, ok := rt.(backend.Embedder); ok {
			o.Knockout.Method = ManyShortlist
		}
	}
	return o
}

// ScoreReading is how a score question's rubric is read (Options.ScoreReading).
type ScoreReading string

// The score readings.
const (
	ReadBothOrders ScoreReading = "both-orders" // listed and reversed, combined (the default)
	ReadListed     ScoreReading = "listed"      // listed once, as a row
)

// validate and checkOptions are Row.Validate and Options.check, as variables so that a test
// can count how often a decision validates its row and Open its options (once each).
var (
	validate     = contract.Row.Validate
	checkOptions = Options.check
)

// DefaultDetectThreshold is the p_yes at or above which the injection detector flags a row
// (Options.DetectThreshold 0).
const DefaultDetectThreshold = 0.5

// KnockoutOptions configure how a Decider under a direct contract decides rows of more
// options than one direct prompt lists (17 to 256). Method picks the scheme:
//   - "" (the default): ManyShortlist on a runtime that reads hidden states
//     (backend.Embedder: the in-process runtime), ManyBinary on one that does not (an HTTP
//     server). New and Open settle it: Decider.Options says which. Measured best on both
//     tasks of docs/many-options.md: as accurate as ManyBinary on Banking77's 77 intents in a
//     fifth of its time, and more accurate on 40 SOC occupations.
//   - ManyBinary: binary-candidates-v1, one yes/no prompt per option ranked by p_yes, as
//     under Options.Contract Binary; the direct contract's bias control does not apply (a
//     row's result says binary-candidates-v1).
//   - ManyKnockout: package knockout. The options are split into balanced groups of at most
//     16 (Grouping: knockout.Shuffle, the default, knockout.File or knockout.Length; Seed
//     seeds the shuffle), each group is decided as a row of its own, the best of each group
//     survive, and the survivors are decided in a final pass. Every pass is an ordinary
//     direct-options-v1 (or guarded) prompt under the Decider's bias control.
//   - ManyShortlist: every option is ranked by the cosine between the hidden states of the
//     row's state and of the option's text (the runtime's Embedder; option texts read once
//     per Decider), and the best Shortlist (default DefaultShortlist) are decided under
//     binary-candidates-v1, one yes/no prompt each, as ManyBinary decides every option; the
//     choice is the kept option of highest ranker-times-binary share (ShortlistRule;
//     Result.Shortlist; docs/many-options.md).
//
// The binary contract needs neither: it decides any count, one prompt per option.
//
// In a run file (batch.RunFile) it is written in snake case; run files written before that
// (keys "Method", "Grouping", …) read alike, as encoding/json matches keys case-insensitively.
type KnockoutOptions struct {
	Method   string `json:"method"`
	Grouping string `json:"grouping"`
	Seed     uint64 `json:"seed"`
	// Shortlist is how many of the ranked options ManyShortlist decides (2 to 16; 0 means
	// DefaultShortlist).
	Shortlist int `json:"shortlist,omitempty"`
}

// DefaultShortlist is how many options ManyShortlist keeps (KnockoutOptions.Shortlist 0).
const DefaultShortlist = 16

// shortlisted is how many of k options ManyShortlist decides (KnockoutOptions.Shortlist).
func (o Options) shortlisted(k int) int {
	return min(k, cmp.Or(o.Knockout.Shortlist, DefaultShortlist))
}

// KnockoutOptions.Method values.
const (
	ManyBinary    = "binary"
	ManyKnockout  = "knockout"
	ManyShortlist = "shortlist"
)
