//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gojev/gojev/internal/parity"
)

const paritySynopsis = `Usage: jev parity [-m MODEL.gguf] [-i rows.jsonl] [--runtime URL] [--json] [flags]

Proves, in numbers, that gojev decides as llama.cpp's HTTP server does, on your model and rows:
  prompts   byte-identical renders: Go renderer vs llama.cpp renderer vs the server's /apply-template
  tokens    in-process token ids vs /tokenize
  logprobs  max |Δ| of every option's log-probability, in-process vs /completion; the server
            normalises in float32 (~1.5e-4 off the exact value on a 50k vocabulary), so the
            bound (1e-4) applies to the same logits through the server's arithmetic, and to
            the normaliser-free gaps between options
  choices   the same chosen option on every row
  corpus    llama.cpp's chat-template corpus: Go vs Python Jinja2, llama.cpp vs Python, Go vs llama.cpp
Without --runtime it starts the llama-server that "make server" built from the same pin, on
127.0.0.1 with flash attention off (as gojev decodes), and stops it after. Exits 1 when a row
check fails (a prompt, token or choice difference, a log-prob drift beyond the bound, a row
error); corpus differences are reported, not failed: some are llama.cpp's on purpose.`

func runParity(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("parity")
	var mf modelFlags
	mf.register(fs)
	var in, corpus, python string
	var asJSON bool
	var bound float64
	stringFlag(fs, &in, "i,input", "examples/tickets.jsonl", "rows `file` (JSONL)")
	stringFlag(fs, &corpus, "corpus", "", "folder of *.jinja chat templates (default: the pinned llama.cpp's models/templates; \"none\" skips)")
	stringFlag(fs, &python, "python", "python3", "a `python` with jinja2 for the corpus check (\"\" skips Python)")
	boolFlag(fs, &asJSON, "json", "print one JSON object instead of the table")
	fs.Float64Var(&bound, "max-logprob-diff", 1e-4, "the largest |Δ logprob| accepted")
	fs.help("max-logprob-diff")
	if err := parseFlags(fs, args, stderr, paritySynopsis); err != nil {
		return err
	}
	rows, _, err := readRows(in)
	if err != nil {
		return err
	}
	opts, err := mf.options()
	if err != nil {
		return err
	}
	path, err := mf.modelPath()
	if err != nil {
		return err
	}
	rep, err := parity.Run(ctx, parity.Config{Model: path, Rows: rows, Options: opts, Threads: mf.threads, Runtime: mf.runtime,
		APIKey: mf.key(), NProbs: mf.nProbs, Corpus: corpus, Python: python, Log: stderr})
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printParity(stdout, rep, bound)
	}
	if !rep.OK(bound) {
		return errors.New("parity: the row checks found differences (listed above)")
	}
	return nil
}

func printParity(w io.Writer, r *parity.Report, bound float64) {
	fmt.Fprintf(w, "parity: %d rows, in-process vs %s, template_date %s\n\n", r.Rows, r.Server, r.TemplateDate)
	fmt.Fprintf(w, "  %-52s %s\n", "check", "result")
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: Go vs llama.cpp renderer", r.PromptsIdentical[parity.GoVsLlama], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: Go vs /apply-template", r.PromptsIdentical[parity.GoVsServer], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: llama.cpp vs /apply-template", r.PromptsIdentical[parity.LlamaVsServer], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "token ids identical (in-process vs /tokenize)", r.TokensIdentical, r.Rows)
	fmt.Fprintf(w, "  %-52s %.3g\n", "max |Δ logprob| (in-process float64 vs /completion)", r.MaxAbsLogprobDiff)
	fmt.Fprintf(w, "  %-52s %.3g (bound %g)\n", "  same logits, server's float32 normaliser", r.MaxAbsLogprobDiffServerArith, bound)
	fmt.Fprintf(w, "  %-52s %.3g (bound %g)\n", "  normaliser-free: |Δ (logprob_i - logprob_A)|", r.MaxAbsLogitGapDiff, bound)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "chosen option identical", r.ChoicesIdentical, r.Rows)
	if c := r.Corpus; c != nil {
		fmt.Fprintf(w, "\n  corpus: %d templates, %d rendered by Python Jinja2\n", c.Templates, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "Go vs Python Jinja2", c.GoVsPython, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "llama.cpp vs Python Jinja2", c.LlamaVsPython, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "Go vs llama.cpp", c.GoVsLlama, c.BothRender)
		if c.PythonError != "" {
			fmt.Fprintf(w, "  python: %s\n", c.PythonError)
		}
	}
	var diffs []parity.Difference
	diffs = append(diffs, r.RowErrors...)
	diffs = append(diffs, r.PromptDifferences...)
	diffs = append(diffs, r.TokenDifferences...)
	diffs = append(diffs, r.ChoiceDifferences...)
	diffs = append(diffs, r.LogprobDifferences...)
	if r.Corpus != nil {
		diffs = append(diffs, r.Corpus.Differences...)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(w, "\ndifferences:\n")
		for _, d := range diffs {
			fmt.Fprintf(w, "  %s %s: %s\n", d.ID, d.What, d.Detail)
		}
	}
}
