package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/bench"
)

// sweepFlags are jev bench's scoring-sweep flags (--scorings).
type sweepFlags struct {
	scorings  string
	block     int
	priorFile string
	results   string
}

// runSweep is jev bench --scorings: the rows (with their input line numbers) decided under
// each scoring in interleaved blocks, one Decider per scoring, in one process (bench.RunScorings).
func runSweep(ctx context.Context, sf sweepFlags, mf *modelFlags, in string, rows []contract.Row, lines []int, out string, stdout, stderr io.Writer) error {
	names := strings.Split(sf.scorings, ",")
	needPrior := false
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		m, _, err := bench.ParseScoring(names[i])
		if err != nil {
			return usageError{fmt.Errorf("--scorings: %w", err)}
		}
		needPrior = needPrior || m == debias.PriDe
	}
	if needPrior && sf.priorFile == "" {
		return usageError{errors.New("--scorings with pride needs --prior FILE (jev decide --debias pride --prior FILE --prior-only -i ROWS estimates one): the sweep times decoding, not the estimate")}
	}
	if sf.priorFile != "" && !needPrior {
		return usageError{errors.New("--prior FILE serves the pride scorings: add one to --scorings, or drop --prior")}
	}
	model, err := mf.modelPath()
	if err != nil {
		return err
	}
	sw, err := bench.RunScorings(ctx, bench.SweepConfig{Scorings: names, Rows: rows, Lines: lines, Block: sf.block, PriorFile: sf.priorFile,
		Results: sf.results, RunFile: batch.RunFile{Args: os.Args[1:], Input: in, NThreads: mf.threads},
		Open:  func(o gojev.Options) (*gojev.Decider, error) { return mf.open(ctx, stderr, o) },
		Model: model, Threads: mf.threads, Log: stderr})
	if errors.Is(err, bench.ErrNotInProcess) {
		return usageError{errors.New("--scorings measures the in-process runtime: drop --runtime")}
	}
	if err != nil {
		return setupUsage(err)
	}
	printSweep(stdout, sw)
	if out != "" {
		if err := sw.Save(out); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench: wrote %s\n", out)
	}
	if sf.results != "" {
		fmt.Fprintf(stderr, "bench: each scoring's records are in %s/<scoring>.jsonl (jev report, jev calibrate read them)\n", sf.results)
	}
	return nil
}

func printSweep(w io.Writer, sw *bench.Sweep) {
	fmt.Fprintf(w, "bench: %s, %d rows under %d scorings, blocks of %d rows interleaved, %d threads, %s (%s)\n\n",
		sw.Contract, sw.Rows, len(sw.Paths), sw.Block, sw.Threads, filepath.Base(sw.Model), sw.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "  %-18s %9s %-16s %8s %9s %10s %9s %9s %9s\n", "scoring", "prompts", "accuracy", "(95% CI)", "wall s", "s/row", "wall ×", "decoded", "tokens ×")
	base := sw.Paths[0].Scoring
	for _, p := range sw.Paths {
		acc := "n/a"
		ci := ""
		if p.Labelled > 0 {
			acc = fmt.Sprintf("%.1f%% (%d/%d)", 100*p.Accuracy, p.Correct, p.Labelled)
			ci = fmt.Sprintf("%.1f–%.1f", 100*p.AccuracyCI.Low, 100*p.AccuracyCI.High)
		}
		fmt.Fprintf(w, "  %-18s %9.2f %-16s %8s %9.1f %10.2f %8.2f× %9d %8.2f×\n", p.Scoring, p.PromptsPerRow, acc, ci, p.WallS,
			p.WallS/float64(max(1, p.Rows)), p.WallVsBase, p.TokensDecoded, p.DecodedVsBase)
	}
	fmt.Fprintf(w, "\n  prompts: decodes a row; wall × and tokens ×: against %s, in this one run\n", base)
}
