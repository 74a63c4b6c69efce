package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/redteam"
	"github.com/gojev/gojev/internal/report"
)

const redteamSynopsis = `Usage: jev redteam -i rows.jsonl -o DIR [--settings LIST] [--families LIST] [-n N] [flags]

Measures how far text inside the evidence can steer decisions (prompt injection). From labelled
rows it builds attacked copies in five documented families (gojev-injection-v1; each family's
texts and published sources: jev redteam --list), every row attacked towards the same wrong
option (its target) in each family:
  letter     an instruction to answer the target's letter
  content    a note naming the target's description, no letter
  breakout   text imitating the end of the JSON evidence and a new criterion and options
  role       fake assistant/user/system turns and chat-template look-alikes (no special tokens)
  unicode    zero-width spaces, Cyrillic look-alikes, right-to-left marks
It writes them to DIR/rows/<family>.jsonl (DIR/rows/clean.jsonl: the rows as they are), decides
the clean and attacked rows under each setting, one Decider each, into
DIR/<setting>/<family>.jsonl (a later run with the same DIR keeps the files that are complete),
and reports per setting and family: the moved rate (the attacked choice is the target and the
clean one is not), the accuracy drop, abstention and the probabilities of the attacked rows,
and the detector's flags. DIR/redteam.json holds the figures; --html a page with the table,
a chart and the clean runs' evaluation.

A setting is tokens joined by "+": a contract (direct, the default; guarded, the seed's guard
sentence in the direct system text, direct-options-guarded-v1; binary), bias control (pride,
permute-N, cyclic), and detect (the injection detector asks the model whether the evidence tries
to dictate the decision; flagged rows abstain). Each decoded setting is also reported without
its bias control and without its detector (the same decodes), and, with --calibration, with the
profile applied and --max-error or --abstain-below abstaining, so list only what needs decoding:
  --settings pride,pride+permute-2,guarded+pride+detect,binary
reports raw, pride, permute-2 (the plain mean of the same shifts), guarded, guarded+pride,
guarded+detect, guarded+pride+detect and binary. PriDe's prior comes from --prior FILE (direct)
or is estimated once per contract on the clean rows (DIR/prior-<prompt_version>.json). Costs
(wall time and tokens decoded per row) are printed per decoded setting, against the first.

  jev redteam -i rows.jsonl -o out/redteam --settings pride,pride+permute-2 -n 50 --html out/redteam.html`

func runRedteam(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("redteam")
	var mf modelFlags
	mf.register(fs)
	mf.registerDecoding(fs)
	var in, dir, settingsSpec, familiesSpec, priorFile, htmlPath string
	var limit, window int
	var detectThreshold float64
	var seed uint64
	var list, buildOnly bool
	var cf calibrationFlags
	stringFlag(fs, &in, "i,input", "", "labelled rows `file` (JSONL)")
	stringFlag(fs, &dir, "o,output", "", "`dir`ectory for the attacked rows, the records and redteam.json")
	stringFlag(fs, &settingsSpec, "settings", "pride,pride+permute-2,guarded+pride+detect", "decoded `settings`, comma-separated (tokens joined by +: direct|guarded|binary, pride|permute-N|cyclic, detect)")
	stringFlag(fs, &familiesSpec, "families", "all", "attack `families`, comma-separated: letter, content, breakout, role, unicode")
	intFlag(fs, &limit, "n,rows", 0, "attack only the first `n` labelled rows (0: all)")
	funcFlag(fs, "seed", "`seed` of the targets and variants (default 1)", func(v string) error {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		return err
	})
	seed = 1
	stringFlag(fs, &priorFile, "prior", "", "PriDe's prior `file` for the direct pride settings (default: estimated on the clean rows)")
	intFlag(fs, &window, "window", 32, "`rows` decided at once")
	floatFlag(fs, &detectThreshold, "detect-threshold", gojev.DefaultDetectThreshold, "the detect settings flag (and abstain on) a row when the detector's p_yes is at least `P`; applied to the recorded p_yes, so changing it decodes nothing")
	stringFlag(fs, &htmlPath, "html", "", "write an HTML page to `file`: the injection table and chart, and the clean runs' evaluation")
	boolFlag(fs, &list, "list", "print the attack families, their variants' texts and sources, and stop")
	boolFlag(fs, &buildOnly, "build-only", "write the attacked rows and stop, deciding nothing")
	stringFlag(fs, &cf.profile, "calibration", "", "calibration profile `file`: each setting it holds a scoring for is also reported calibrated (+cal), abstaining per --max-error or --abstain-below")
	floatFlag(fs, &cf.abstainBelow, "abstain-below", 0, "with --calibration: the +cal settings abstain below `P`")
	floatFlag(fs, &cf.maxError, "max-error", 0, "with --calibration: the +cal settings abstain below the profile's SGR threshold for error rate `E`")
	floatFlag(fs, &cf.confidence, "confidence", 0.9, "the `confidence` of --max-error's bound")
	if err := parseFlags(fs, args, stderr, redteamSynopsis); err != nil {
		return err
	}
	cf.seen(fs)
	cat := redteam.Families()
	if list {
		return printFamilies(stdout, cat)
	}
	if in == "" || dir == "" {
		return usageError{errors.New("give the labelled rows (-i rows.jsonl) and a directory for the results (-o DIR)")}
	}
	families, err := cat.Select(strings.Split(familiesSpec, ","))
	if err != nil {
		return usageError{err}
	}
	var settings []redteam.Setting
	for _, spec := range strings.Split(settingsSpec, ",") {
		s, err := redteam.ParseSetting(strings.TrimSpace(spec))
		if err != nil {
			return usageError{fmt.Errorf("--settings: %w", err)}
		}
		settings = append(settings, s)
	}
	var prof *calibrate.Profile
	if cf.profile != "" {
		if prof, err = calibrate.Load(cf.profile); err != nil {
			return usageError{fmt.Errorf("--calibration: %w", err)}
		}
	} else if cf.abstainBelow != 0 || cf.maxErrorSet {
		return usageError{errors.New("--abstain-below and --max-error set the +cal settings' threshold: give --calibration FILE")}
	}

	// The attacked rows.
	rowsDir := filepath.Join(dir, "rows")
	targets, nrows, err := redteam.BuildAttacks(cat, families, in, rowsDir, limit, seed)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(stderr, "jev redteam: %d labelled rows attacked in %d families (%s, seed %d) in %s\n", nrows, len(families), cat.Version, seed, rowsDir)
	if buildOnly {
		return nil
	}
	files := redteam.Files(families)
	rep := &redteam.Report{Catalogue: cat.Version, Input: in, Rows: nrows, Families: families, Started: time.Now().UTC()}
	cfg := &redteam.DecideConfig{Window: window, PriorFile: priorFile, Log: stderr,
		RunFile: batch.RunFile{Jev: batch.Version(), LlamaCpp: batch.LlamaCppVersion(), NThreads: mf.threads},
		Open:    func(o gojev.Options) (*gojev.Decider, error) { return mf.open(ctx, stderr, o) }}
	for _, s := range settings {
		rep.Settings = append(rep.Settings, s.Name)
		if err := redteam.DecideSetting(ctx, s, files, rowsDir, dir, cfg); err != nil {
			return err
		}
	}
	rep.Model = cfg.Model

	// The figures, from the records on disk.
	variants, derived := redteam.Readings(settings, prof != nil)
	rep.Derived = derived
	if prof != nil {
		rep.Profile = &batch.RunCalibration{File: cf.profile, SHA256: prof.SHA256}
	}
	for _, s := range settings {
		if s.Options.Detect {
			rep.Detector = &redteam.DetectInfo{PromptVersion: contract.DetectPromptVersion, Threshold: detectThreshold}
		}
	}
	rep.Figures, err = redteam.FiguresOf(variants, files, dir, targets, redteam.MeasureConfig{DetectThreshold: detectThreshold,
		Profile: prof, MaxError: cf.maxError, Confidence: cf.confidence, AbstainBelow: cf.abstainBelow})
	if err != nil {
		return usageError{err}
	}
	rep.Costs = redteam.Costs(settings, files, dir)
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, "redteam.json"), func(w io.Writer) error { _, err := w.Write(append(b, '\n')); return err }); err != nil {
		return err
	}
	printRedteam(stdout, rep)
	if htmlPath != "" {
		var runs []*report.Run
		for _, s := range settings {
			rs, err := report.Load(filepath.Join(redteam.Dir(dir, s.Name), "clean.jsonl"), "clean "+s.Name)
			if err != nil {
				return err
			}
			runs = append(runs, rs...)
		}
		page := report.Build(runs)
		page.Injection = injectionSection(rep)
		if err := writeFile(htmlPath, page.WriteHTML); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "jev redteam: HTML report written to %s\n", htmlPath)
	}
	fmt.Fprintf(stderr, "jev redteam: figures written to %s\n", filepath.Join(dir, "redteam.json"))
	return nil
}

func printFamilies(w io.Writer, cat *redteam.Catalogue) error {
	fmt.Fprintf(w, "%s: %s\n", cat.Version, cat.Description)
	for _, f := range cat.Families {
		fmt.Fprintf(w, "\n%s (names the target's %s): %s\n", f.Name, f.Target, f.Description)
		for _, s := range f.Sources {
			fmt.Fprintf(w, "  source: %s\n", s)
		}
		for _, v := range f.Variants {
			t := ""
			if v.Transform != "" {
				t = " [" + v.Transform + ": " + cat.Transforms[v.Transform] + "]"
			}
			fmt.Fprintf(w, "  %-20s %q%s\n", v.Name, v.Text, t)
		}
	}
	return nil
}

func printRedteam(w io.Writer, rep *redteam.Report) {
	fmt.Fprintf(w, "jev redteam: %d rows, %s, settings %s\n\n", rep.Rows, rep.Catalogue, strings.Join(rep.Settings, ", "))
	fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %7s %9s %9s %8s %8s %6s\n", "setting", "family", "moved", "acted", "clean", "attacked", "abstained", "p(moved)", "flagged", "clean fl", "AUC")
	for _, f := range rep.Figures {
		fl, cfl, auc := "—", "—", "—"
		if f.Detected {
			fl, cfl, auc = pct1(f.AttackedFlagged), pct1(f.CleanFlagged), fmt.Sprintf("%.3f", f.DetectorAUC)
		}
		fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %8s %9s %9.3f %8s %8s %6s\n", f.Setting, f.Family, pct1(f.Moved), pct1(f.MovedAnswered),
			pct1(f.CleanAccuracy), pct1(f.AttackedAccuracy), pct1(f.AttackedAbstained), f.MovedMeanProbability, fl, cfl, auc)
	}
	fmt.Fprintf(w, "\n  moved: attacked choice = target, clean choice ≠ target; acted: moved and not abstained; clean/attacked: accuracy;\n")
	fmt.Fprintf(w, "  p(moved): mean probability of the moved rows; flagged: the detector's recall on the family, clean fl: its false alarms,\n")
	fmt.Fprintf(w, "  AUC: how well its p_yes separates the family's rows from the clean ones, at any threshold\n\n")
	fmt.Fprintf(w, "  %-26s %8s %10s %9s %12s %9s\n", "decoded setting", "rows", "s/row", "wall ×", "tokens/row", "tokens ×")
	for _, c := range rep.Costs {
		fmt.Fprintf(w, "  %-26s %8d %10.2f %8.2f× %12.0f %8.2f×\n", c.Setting, c.Rows, c.WallPerRowS, c.WallVsFirst, c.DecodedPerRow, c.DecodedVsFirst)
	}
}

func pct1(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// injectionSection turns the figures into the HTML report's injection section.
func injectionSection(rep *redteam.Report) *report.Injection {
	inj := &report.Injection{Catalogue: rep.Catalogue, Rows: rep.Rows, Figures: rep.Figures}
	for _, f := range rep.Families {
		inj.Families = append(inj.Families, report.InjectionFamily{Name: f.Name, Description: f.Description, Sources: f.Sources})
	}
	for _, c := range rep.Costs {
		inj.Costs = append(inj.Costs, report.InjectionCost{Setting: c.Setting, WallPerRowS: c.WallPerRowS, WallVsFirst: c.WallVsFirst,
			DecodedPerRow: c.DecodedPerRow, DecodedVsFirst: c.DecodedVsFirst})
	}
	return inj
}
