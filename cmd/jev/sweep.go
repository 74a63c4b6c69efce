package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/app/bench"
	"github.com/gojev/gojev/internal/cli"
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
	names, err := bench.ParseScorings(sf.scorings, sf.priorFile)
	if err != nil {
		return cli.Usage(err)
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
		return cli.Usage(errors.New("--scorings measures the in-process runtime: drop --runtime"))
	}
	if err != nil {
		return setupUsage(err)
	}
	sw.WriteText(stdout)
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
