package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/app/redteam"
	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/internal/version"
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
sentence in the direct system text, direct-options-guarded-v1; spotlight, the evidence
datamarked, direct-options-spotlight-v1; binary), bias control (pride,
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
	fs := cli.NewFlagSet("redteam")
	var mf modelFlags
	mf.register(fs)
	mf.registerDecoding(fs)
	var in, dir, settingsSpec, familiesSpec, priorFile, htmlPath string
	var limit, window int
	var detectThreshold float64
	var seed uint64
	var list, buildOnly bool
	var cf calibrationFlags
	cli.String(fs, &in, "i,input", "", "labelled rows `file` (JSONL)")
	cli.String(fs, &dir, "o,output", "", "`dir`ectory for the attacked rows, the records and redteam.json")
	cli.String(fs, &settingsSpec, "settings", "pride,pride+permute-2,guarded+pride+detect", "decoded `settings`, comma-separated (tokens joined by +: direct|guarded|spotlight|binary, pride|permute-N|cyclic, detect)")
	cli.String(fs, &familiesSpec, "families", "all", "attack `families`, comma-separated: letter, content, breakout, role, unicode")
	cli.Int(fs, &limit, "n,rows", 0, "attack only the first `n` labelled rows (0: all)")
	cli.Func(fs, "seed", "`seed` of the targets and variants (default 1)", func(v string) error {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		return err
	})
	seed = 1
	cli.String(fs, &priorFile, "prior", "", "PriDe's prior `file` for the direct pride settings (default: estimated on the clean rows)")
	cli.Int(fs, &window, "window", 32, "`rows` decided at once")
	cli.Float(fs, &detectThreshold, "detect-threshold", gojev.DefaultDetectThreshold, "the detect settings flag (and abstain on) a row when the detector's p_yes is at least `P`; applied to the recorded p_yes, so changing it decodes nothing")
	cli.String(fs, &htmlPath, "html", "", "write an HTML page to `file`: the injection table and chart, and the clean runs' evaluation")
	cli.Bool(fs, &list, "list", "print the attack families, their variants' texts and sources, and stop")
	cli.Bool(fs, &buildOnly, "build-only", "write the attacked rows and stop, deciding nothing")
	cli.String(fs, &cf.profile, "calibration", "", "calibration profile `file`: each setting it holds a scoring for is also reported calibrated (+cal), abstaining per --max-error or --abstain-below")
	cli.Float(fs, &cf.abstainBelow, "abstain-below", 0, "with --calibration: the +cal settings abstain below `P`")
	cli.Float(fs, &cf.maxError, "max-error", 0, "with --calibration: the +cal settings abstain below the profile's SGR threshold for error rate `E`")
	cli.Float(fs, &cf.confidence, "confidence", 0.9, "the `confidence` of --max-error's bound")
	if err := cli.Parse(fs, args, stderr, redteamSynopsis); err != nil {
		return err
	}
	cf.seen(fs)
	cat := redteam.Families()
	if list {
		cat.WriteText(stdout)
		return nil
	}
	if in == "" || dir == "" {
		return cli.Usage(errors.New("give the labelled rows (-i rows.jsonl) and a directory for the results (-o DIR)"))
	}
	families, err := cat.Select(strings.Split(familiesSpec, ","))
	if err != nil {
		return cli.Usage(err)
	}
	var settings []redteam.Setting
	for _, spec := range strings.Split(settingsSpec, ",") {
		s, err := redteam.ParseSetting(strings.TrimSpace(spec))
		if err != nil {
			return cli.Usage(fmt.Errorf("--settings: %w", err))
		}
		settings = append(settings, s)
	}
	var prof *calibrate.Profile
	if cf.profile != "" {
		if prof, err = calibrate.Load(cf.profile); err != nil {
			return cli.Usage(fmt.Errorf("--calibration: %w", err))
		}
	} else if cf.abstainBelow != 0 || cf.maxErrorSet {
		return cli.Usage(errors.New("--abstain-below and --max-error set the +cal settings' threshold: give --calibration FILE"))
	}

	// The attacked rows.
	rowsDir := filepath.Join(dir, "rows")
	targets, nrows, err := redteam.BuildAttacks(cat, families, in, rowsDir, limit, seed)
	if err != nil {
		return cli.Usage(err)
	}
	fmt.Fprintf(stderr, "jev redteam: %d labelled rows attacked in %d families (%s, seed %d) in %s\n", nrows, len(families), cat.Version, seed, rowsDir)
	if buildOnly {
		return nil
	}
	rep, err := redteam.Run(ctx, redteam.Config{Input: in, Dir: dir, Catalogue: cat, Families: families, Rows: nrows, Targets: targets, Settings: settings,
		Decide: redteam.DecideConfig{Window: window, PriorFile: priorFile, Log: stderr, RunFile: batch.RunFile{Jev: version.Jev(), LlamaCpp: version.LlamaCpp(), NThreads: mf.threads},
			Open: func(o gojev.Options) (*gojev.Decider, error) { return mf.open(ctx, stderr, o) }},
		Measure:     redteam.MeasureConfig{DetectThreshold: detectThreshold, Profile: prof, MaxError: cf.maxError, Confidence: cf.confidence, AbstainBelow: cf.abstainBelow},
		ProfileFile: cf.profile})
	if errors.Is(err, redteam.ErrFigures) {
		return cli.Usage(err)
	}
	if err != nil {
		return err
	}
	rep.WriteText(stdout)
	if htmlPath != "" {
		page, err := report.RedteamPage(rep, dir)
		if err != nil {
			return err
		}
		if err := writeFile(htmlPath, page.WriteHTML); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "jev redteam: HTML report written to %s\n", htmlPath)
	}
	fmt.Fprintf(stderr, "jev redteam: figures written to %s\n", filepath.Join(dir, "redteam.json"))
	return nil
}
