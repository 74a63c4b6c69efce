package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/cli"
)

const calibrateSynopsis = `Usage: jev calibrate RESULTS.jsonl [more.jsonl ...] [-o profile.json] [--eval HELD.jsonl ...]

Fits a calibration profile from results files that hold labels, without deciding anything
again: for every scoring the files hold (raw; pride, from a --debias pride file, which holds
the raw scores too; cyclic; permute-N; binary; contextual), it compares four maps from the
probability a decision reports to how often such decisions are right, by k-fold
cross-validation on the labelled rows:
  temperature   softmax(scores/T), one T (Guo et al., ICML 2017)
  platt         σ(a·logit(p) + b) of the chosen option's probability (Platt 1999)
  histogram     equal-mass bins, each the share right (Zadrozny & Elkan 2001)
  isotonic      the non-decreasing map closest to right/wrong (Zadrozny & Elkan 2002)
and keeps the one with the lowest cross-validated Brier score. Maps are fitted per option
count where 50 rows allow, else on every row. The figures printed are cross-validated (each
fold calibrated by the map fitted on the others), never in-sample.

-o writes the profile: the model (name, file sha256), the prompt_version, per scoring the
chosen map and every method's figures, the fitting rows' calibrated probabilities (from which
jev decide --max-error chooses an abstention threshold for any error budget), the PriDe prior
of the fitting run, and the files it came from. Use it with
  jev decide --calibration profile.json [--max-error 0.1 | --abstain-below 0.6] ...

--eval scores the maps on other labelled results files (held-out rows), and for each
--budgets error rate, the threshold SGR chooses on the fitting rows and what it gives on the
held-out rows (coverage, and the error rate of the rows answered with its 95 % interval).

--apply PROFILE calibrates an existing results file instead, without decoding: each record
gets what jev decide --calibration PROFILE would have given it (and --abstain-below or
--max-error its "abstained"), written to -o with a run file, for jev report. Where the
profile keeps its fitting rows' label-free statistics, the rows are compared with them, as
jev decide compares them: a warning says when they are not drawn alike, and the run file
holds the comparison ("shift").

  jev calibrate out/fit.jsonl -o profile.json --eval out/held.jsonl
  jev calibrate --apply profile.json out/held.jsonl -o out/held-calibrated.jsonl --max-error 0.1`

func runCalibrate(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("calibrate")
	var out, jsonPath, budgets string
	var evalFiles []string
	var folds, limit int
	var confidence float64
	cli.String(fs, &out, "o,output", "", "write the profile to `file` (JSON); without it, only the figures are printed")
	cli.Func(fs, "eval", "score the maps on the labelled rows of a held-out results `file` (repeatable)", func(v string) error {
		evalFiles = append(evalFiles, v)
		return nil
	})
	cli.Int(fs, &folds, "folds", calibrate.DefaultFolds, "cross-validation `folds`")
	cli.Int(fs, &limit, "rows", 0, "fit on the first `N` labelled rows of each scoring only (0: all): figures against the number of fitting rows")
	cli.String(fs, &budgets, "budgets", "0.05,0.10", "error `rates` whose SGR abstention thresholds --eval reports")
	cli.Float(fs, &confidence, "confidence", 0.9, "the `confidence` (1−δ) of those thresholds' error bound")
	cli.String(fs, &jsonPath, "json", "", "write the figures as JSON to `file` (- for stdout, instead of the text)")
	var apply calibrationFlags
	cli.String(fs, &apply.profile, "apply", "", "calibrate the records of one results `file` with this profile instead of fitting one; -o is then the calibrated results file")
	cli.Float(fs, &apply.abstainBelow, "abstain-below", 0, "with --apply: mark records whose calibrated probability is below `P` abstained")
	cli.Float(fs, &apply.maxError, "max-error", 0, "with --apply: abstain below the profile's SGR threshold for error rate `E` (with --confidence)")
	files, err := cli.ParseInterleaved(fs, args, stderr, calibrateSynopsis)
	if err != nil {
		return err
	}
	apply.seen(fs)
	if apply.profile != "" {
		apply.confidence, apply.applying = confidence, true
		return applyProfile(files, out, &apply, stderr)
	}
	if apply.abstainBelow != 0 || apply.maxErrorSet {
		return cli.Usage(errors.New("--abstain-below and --max-error go with --apply (or with jev decide --calibration)"))
	}
	if len(files) == 0 {
		return cli.Usage(errors.New("name at least one labelled results file (jev decide -o FILE on rows with a \"label\"); jev calibrate -h explains"))
	}
	var maxErrors []float64
	for _, b := range strings.Split(budgets, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(b), 64)
		if err != nil || !(v > 0 && v < 1) {
			return cli.Usage(fmt.Errorf("--budgets %q: want error rates in (0, 1), comma-separated", budgets))
		}
		maxErrors = append(maxErrors, v)
	}
	if !(confidence > 0 && confidence < 1) {
		return cli.Usage(fmt.Errorf("--confidence %v: want a probability in (0, 1)", confidence))
	}
	prof, rep, err := report.FitCalibration(files, evalFiles, folds, limit, maxErrors, confidence)
	if err != nil {
		return cli.Usage(err)
	}
	rep.Profile = out
	for _, f := range rep.NoRunFile {
		fmt.Fprintf(stderr, "jev calibrate: warning: %s has no run file beside it (%s): the profile cannot record the model (jev decide will not check it) or the PriDe prior of that run; keep the .run.json that jev decide wrote beside its results\n", f, batch.RunFilePath(f))
	}
	for _, s := range prof.Skipped {
		fmt.Fprintf(stderr, "jev calibrate: warning: scoring %s is left out of the profile\n", s)
	}
	if out != "" {
		if err := prof.Save(out); err != nil {
			return err
		}
	}
	if jsonPath == "-" {
		return rep.WriteJSON(stdout)
	}
	rep.WriteText(stdout)
	if jsonPath != "" {
		if err := writeFile(jsonPath, rep.WriteJSON); err != nil {
			return err
		}
	}
	if out != "" {
		fmt.Fprintf(stderr, "jev calibrate: profile written to %s (sha256 %.12s…): jev decide --calibration %s\n", out, prof.SHA256, out)
	}
	return nil
}

// calibrationFlags are jev decide's calibration and abstention flags.
type calibrationFlags struct {
	profile      string
	abstainBelow float64
	maxError     float64
	maxErrorSet  bool // --max-error was given (0 included)
	applying     bool // jev calibrate --apply, not jev decide --calibration
	confidence   float64
}

// seen records which calibration flags the command line set.
func (c *calibrationFlags) seen(fs *cli.FlagSet) {
	fs.Visit(func(f *flag.Flag) { c.maxErrorSet = c.maxErrorSet || f.Name == "max-error" })
}

func (c *calibrationFlags) register(fs *cli.FlagSet) {
	cli.String(fs, &c.profile, "calibration", "", "calibration profile `file` (jev calibrate): \"probability\" and a \"calibration\" object follow its map for this run's scoring; the raw fields and the choices stay. Its PriDe prior serves --debias pride when no --prior is given")
	cli.Float(fs, &c.abstainBelow, "abstain-below", 0, "mark rows whose (calibrated) probability is below `P` \"abstained\": true (the choice is kept); the summary gives the coverage and the accuracy of the rows answered (not abstained)")
	cli.Float(fs, &c.maxError, "max-error", 0, "with --calibration: abstain below the threshold that keeps the error rate of the rows answered (not abstained) at most `E` with --confidence (SGR on the profile's fitting rows; Geifman & El-Yaniv, NeurIPS 2017)")
	cli.Float(fs, &c.confidence, "confidence", 0.9, "the `confidence` (1−δ) of --max-error's bound")
}

// load checks the flags and reads the profile (nil without --calibration); a profile that
// records no model (fitted from results files without their run files) is warned about on
// stderr, since it cannot be checked against the model it serves.
func (c *calibrationFlags) load(opts gojev.Options, stderr io.Writer, cmd string) (*calibrate.Profile, error) {
	switch {
	case c.abstainBelow < 0 || c.abstainBelow > 1:
		return nil, cli.Usage(fmt.Errorf("--abstain-below %v: want a probability in [0, 1]", c.abstainBelow))
	case c.maxErrorSet && !(c.maxError > 0 && c.maxError < 1), c.maxError < 0 || c.maxError >= 1:
		return nil, cli.Usage(fmt.Errorf("--max-error %v: want an error rate in (0, 1)", c.maxError))
	case !(c.confidence > 0 && c.confidence < 1):
		return nil, cli.Usage(fmt.Errorf("--confidence %v: want a probability in (0, 1)", c.confidence))
	case c.maxError > 0 && c.abstainBelow > 0:
		return nil, cli.Usage(errors.New("--max-error chooses the threshold that --abstain-below sets by hand: give one of them"))
	case c.maxErrorSet && c.profile == "":
		return nil, cli.Usage(errors.New("--max-error chooses its threshold on a calibration profile's fitting rows: give --calibration FILE (jev calibrate writes one)"))
	case c.profile == "":
		return nil, nil
	}
	flagName := "--calibration"
	if c.applying {
		flagName = "--apply"
	}
	p, err := calibrate.Load(c.profile)
	if errors.Is(err, calibrate.ErrProfile) {
		err = fmt.Errorf("%w (a profile is the JSON file jev calibrate -o writes, not a results file)", err)
	}
	if err != nil {
		return nil, cli.Usage(fmt.Errorf("%s: %w", flagName, err))
	}
	if err := opts.CheckProfile(p); err != nil {
		return nil, cli.Usage(fmt.Errorf("%s %s: %w", flagName, c.profile, err))
	}
	if p.Model.SHA256 == "" {
		fmt.Fprintf(stderr, "jev %s: warning: %s records no model (it was fitted from results files without their run files), so it is not checked against this run's model\n", cmd, c.profile)
	}
	return p, nil
}

// threshold sets opts.AbstainBelow from --abstain-below, or from --max-error through the
// profile's SGR curve, and says which on stderr.
func (c *calibrationFlags) threshold(p *calibrate.Profile, opts *gojev.Options, stderr io.Writer, quiet bool, cmd string) error {
	opts.AbstainBelow = c.abstainBelow
	if c.maxError == 0 {
		return nil
	}
	scoring := opts.ProfileScoring(p)
	th, err := p.Threshold(scoring, c.maxError, c.confidence)
	if err != nil {
		if least, lerr := p.SmallestBudget(scoring, c.confidence); lerr == nil && least < 1 {
			return cli.Usage(fmt.Errorf("--max-error %v: the profile's fitting rows certify --max-error %.3f or more at confidence %.2g: %w", c.maxError, least, c.confidence, err))
		}
		return cli.Usage(fmt.Errorf("--max-error %v: %w", c.maxError, err))
	}
	opts.AbstainBelow = th.Probability
	if !quiet {
		fmt.Fprintf(stderr, "jev %s: abstaining below p=%.4f: on the profile's %d fitting rows that answers %.1f%% with error %.3f, bounded by %.3f ≤ %.3g with confidence %.2g (SGR)\n",
			cmd, th.Probability, th.Rows, 100*th.Coverage, th.Risk, th.Bound, c.maxError, c.confidence)
	}
	return nil
}

// applyProfile is jev calibrate --apply: one results file through batch.ApplyProfile into out.
func applyProfile(files []string, out string, cf *calibrationFlags, stderr io.Writer) error {
	if len(files) != 1 || out == "" {
		return cli.Usage(errors.New("--apply PROFILE calibrates one results file into -o FILE: jev calibrate --apply profile.json results.jsonl -o calibrated.jsonl"))
	}
	in := files[0]
	meta, err := batch.RunFileOf(in)
	if err != nil {
		return cli.Usage(err)
	}
	var opts gojev.Options
	if meta != nil {
		opts = meta.Options()
	}
	prof, err := cf.load(opts, stderr, "calibrate")
	if err != nil {
		return err
	}
	if err := cf.threshold(prof, &opts, stderr, false, "calibrate"); err != nil {
		return err
	}
	sum, err := batch.ApplyProfile(in, out, prof, cf.profile, opts.AbstainBelow)
	var se *batch.SetupError
	if errors.As(err, &se) {
		return cli.Usage(fmt.Errorf("--apply %w", se.Err))
	}
	if err != nil {
		return err
	}
	n, abstained := sum.Decided, sum.Abstained
	fmt.Fprintf(stderr, "jev calibrate: %d decisions of %s calibrated with %s into %s", n, in, cf.profile, out)
	if opts.AbstainBelow > 0 && n > 0 {
		fmt.Fprintf(stderr, "; %d abstained below p=%.4f (coverage %.1f%%)", abstained, opts.AbstainBelow, 100*float64(n-abstained)/float64(n))
	}
	fmt.Fprintln(stderr)
	warnShift(stderr, "jev calibrate: ", sum.Shift, cf.maxError)
	return nil
}
