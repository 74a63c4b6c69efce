//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/gojev/gojev/internal/app/parity"
	"github.com/gojev/gojev/internal/cli"
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
	fs := cli.NewFlagSet("parity")
	var mf modelFlags
	mf.register(fs)
	var in, corpus, python string
	var asJSON bool
	var bound float64
	cli.String(fs, &in, "i,input", "examples/tickets.jsonl", "rows `file` (JSONL)")
	cli.String(fs, &corpus, "corpus", "", "folder of *.jinja chat templates (default: the pinned llama.cpp's models/templates; \"none\" skips)")
	cli.String(fs, &python, "python", "python3", "a `python` with jinja2 for the corpus check (\"\" skips Python)")
	cli.Bool(fs, &asJSON, "json", "print one JSON object instead of the table")
	fs.Float64Var(&bound, "max-logprob-diff", 1e-4, "the largest |Δ logprob| accepted")
	fs.Help("max-logprob-diff")
	if err := cli.Parse(fs, args, stderr, paritySynopsis); err != nil {
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
		rep.WriteText(stdout, bound)
	}
	if !rep.OK(bound) {
		return errors.New("parity: the row checks found differences (listed above)")
	}
	return nil
}
