package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/atomicfile"
	"github.com/gojev/gojev/internal/cli"
)

const reportSynopsis = `Usage: jev report [--html report.html] [--json report.json] RESULTS.jsonl[=NAME] ...

Reads one or more jev decide results files (with their run files, RESULTS.jsonl.run.json,
when present) and reports, side by side: accuracy over the labelled rows with its 95 % Wilson
interval, macro-F1, per-label precision, recall and F1, the confusion matrix, the chosen
letters against the gold letters (position bias at a glance), the expected calibration error
and Brier score with a reliability diagram, latency p50/p95 and decisions/s, and each run's
model (name, file sha256), contract and flags. Ranking the rows by probability, it gives the
risk–coverage figures: AURC, accuracy at 80 % coverage, the coverage at ≤ 5 % and ≤ 10 % error,
and for a run with abstentions (--abstain-below, --max-error) its coverage and the accuracy of
the rows answered. A file decided with --debias or --permute gives two runs: its debiased
choices and its raw ones, from the same decodes; one decided with --calibration (or written by
jev calibrate --apply) gives its calibrated run and an "(uncalibrated)" one. Each run after the
first is paired with the first on the rows both decided (McNemar's exact test).

The table goes to stdout; --json writes the figures (- for stdout, instead of the table) and
--html a self-contained page with the plots. NAME names a run (default: the file name).

  jev report out/raw.jsonl out/pride.jsonl=PriDe --html out/report.html`

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("report")
	var htmlPath, jsonPath string
	cli.String(fs, &htmlPath, "html", "", "write a self-contained HTML report with the plots to `file`")
	cli.String(fs, &jsonPath, "json", "", "write the figures as JSON to `file` (- for stdout)")
	files, err := cli.ParseInterleaved(fs, args, stderr, reportSynopsis)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return cli.Usage(errors.New("name at least one results file (jev decide -o FILE); jev report -h explains"))
	}
	var runs []*report.Run
	for _, f := range files {
		path, name, _ := strings.Cut(f, "=")
		rs, err := report.Load(path, name)
		if err != nil {
			return cli.Usage(err)
		}
		runs = append(runs, rs...)
	}
	rep := report.Build(runs)
	if jsonPath == "-" {
		return rep.WriteJSON(stdout)
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	if jsonPath != "" {
		if err := writeFile(jsonPath, rep.WriteJSON); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "jev report: figures written to %s\n", jsonPath)
	}
	if htmlPath != "" {
		if err := writeFile(htmlPath, rep.WriteHTML); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "jev report: HTML report written to %s\n", htmlPath)
	}
	return nil
}

// writeFile writes what write produces to path, replacing it only when complete.
func writeFile(path string, write func(io.Writer) error) error {
	return atomicfile.Write(path, write)
}
