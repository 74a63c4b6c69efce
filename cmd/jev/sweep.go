package main

import (
	"context"
	"encoding/json"
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
// each scoring in interleaved blocks, one Decider per scoring, in one process.
func runSweep(ctx context.Context, sf sweepFlags, mf *modelFlags, in string, rows []contract.Row, lines []int, out string, stdout, stderr io.Writer) error {
	names := strings.Split(sf.scorings, ",")
	type setting struct {
		method  debias.Method
		permute int
	}
	settings := make([]setting, len(names))
	needPrior := false
	for i, n := range names {
		m, p, err := bench.ParseScoring(strings.TrimSpace(n))
		if err != nil {
			return usageError{fmt.Errorf("--scorings: %w", err)}
		}
		names[i] = strings.TrimSpace(n)
		settings[i] = setting{m, p}
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
	var id debias.ModelID
	var prior *debias.Prior
	deciders := make([]bench.Scoring, len(names))
	defer func() {
		for _, s := range deciders {
			if s.Decider != nil {
				_ = s.Decider.Close()
			}
		}
	}()
	for i, n := range names {
		d, err := mf.open(ctx, stderr, gojev.Options{Debias: settings[i].method, Permute: settings[i].permute, Prior: prior})
		if err != nil {
			return err
		}
		deciders[i] = bench.Scoring{Name: n, Decider: d}
		if i == 0 {
			m := d.Check().Model
			if m == nil {
				return usageError{errors.New("--scorings measures the in-process runtime: drop --runtime")}
			}
			if id, err = batch.ModelIdentity(m.Path, m.Name); err != nil {
				return err
			}
			if needPrior {
				bf := biasFlags{priorFile: sf.priorFile}
				if prior, err = bf.loadPrior(id, contract.PromptVersion); err != nil {
					return err
				}
				if prior == nil {
					return usageError{fmt.Errorf("--prior %s: no such file: jev decide --debias pride --prior %s --prior-only -i ROWS estimates it", sf.priorFile, sf.priorFile)}
				}
			}
		}
		if settings[i].method == debias.PriDe {
			d.SetPrior(prior)
		}
	}

	var rec *bench.Recorder
	if sf.results != "" {
		if rec, err = bench.NewRecorder(sf.results, names, rows, lines); err != nil {
			return err
		}
		defer rec.Close()
	}
	var record func(s, r int, o gojev.Outcome) error
	if rec != nil {
		record = rec.Record
	}
	fmt.Fprintf(stderr, "bench: %d rows under %s, in blocks of %d rows ...\n", len(rows), strings.Join(names, ", "), sf.block)
	sw, err := bench.RunSweep(ctx, deciders, rows, sf.block, record)
	if err != nil {
		return err
	}
	sw.Threads, sw.Model, sw.Contract = mf.threads, model, contract.PromptVersion
	if rec != nil {
		for i, p := range sw.Paths {
			meta := batch.RunFile{Jev: batch.Version(), LlamaCpp: batch.LlamaCppVersion(), Args: os.Args[1:], Input: in, PromptVersion: contract.PromptVersion,
				Debias: settings[i].method, Permute: settings[i].permute, Model: &id, Backend: deciders[i].Decider.Check().Backend,
				Decode: deciders[i].Decider.Check().Decode, NThreads: mf.threads, Started: sw.Started}
			if settings[i].method == debias.PriDe {
				meta.Prior = prior
			}
			if err := rec.Finish(i, p, meta); err != nil {
				return err
			}
		}
	}
	printSweep(stdout, sw)
	if out != "" {
		b, err := json.MarshalIndent(sw, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(out, append(b, '\n'), 0o644); err != nil {
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
