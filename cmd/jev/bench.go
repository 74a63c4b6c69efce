package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/app/bench"
	"github.com/gojev/gojev/internal/cli"
)

const benchSynopsis = `Usage: jev bench [-m MODEL.gguf] [-i rows.jsonl] [--contract direct|binary] [-o bench.json] [flags]

Runs the same rows through each decision path, one after the other, and measures them:
  prepare     the host alone: everything done for a row before llama_decode (validating,
              rendering the chat template, the special-text and boundary checks, tokenizing),
              rows prepared on every core at once (GOMAXPROCS), nothing decoded; its rate over
              the fastest decoding path's is printed (prepare/decode)
  engine      in-process, all rows at once, one sequence per llama_decode: shared prefixes
              decoded once, results in input order, bit-identical to deciding each alone
  packed      the engine with packed decoding: up to 16 prompts per llama_decode as separate
              sequences sharing their common prefix (the default where layers go to a GPU);
              its speed and its max |Δ logprob| and same choices against engine are printed
  sequential  in-process, one row at a time, every prompt decoded whole (the seed's flow
              without HTTP)
  http        the seed's HTTP path against llama-server from the same pin and model:
              /apply-template, /tokenize for the prompt and its boundary probes, /completion
  hardware    llama.cpp's llama-bench -p N (N = the rows' mean prompt length), the machine's
              prompt-processing rate on the same model and threads
It prints decisions/s, prompt tokens/s (the tokens a no-reuse run decodes, over the wall time),
p50/p95 latency per decision, the ratios, and whether the engine and the reference path (http,
else sequential) produced the same prompt_sha256 and chosen option on every row. -o writes the
figures as JSON and an SVG chart beside it (bench.json -> bench.svg).

--scorings raw,permute-2,permute-4,cyclic measures bias control instead: the same rows decided
in-process under each scoring (raw, pride, cyclic, permute-N, pride+permute-N; one Decider
each; any of them +detect, or detect alone for raw+detect, adds the injection detector's
prompt a row, rows with p_yes >= 0.5 abstaining as under --detect --abstain-on-suspect, their
choices still counted in the accuracy), in blocks of --block rows that every scoring decides
in turn, the first of each block rotating, so that a shared machine's drift falls on every scoring alike. It prints each
scoring's decodes a row, accuracy (labelled rows), wall time and tokens decoded, and their
ratios to the first scoring, all from this one run; pride scorings read --prior FILE.
--results DIR keeps each scoring's records (DIR/<scoring>.jsonl, with run files) for jev
report and jev calibrate.

  jev bench -t 2 -i rows.jsonl --scorings raw,permute-2,permute-4,cyclic --results out/sweep -o out/sweep.json

--serve measures jev serve instead: -i holds typed rows ({"id", "state", "questions"}, as jev
decide takes them). It decides them as jev decide does, then serves the System One API over the
same model on a loopback port and sends their questions as requests from --clients concurrent
clients (--requests in all, cycling through the rows), and prints questions/s of both, the
ratio, the requests' p50/p95/p99 latency, and the process's RSS every tenth of the requests.

  jev bench -t 2 -i typed.jsonl --serve --clients 8 --requests 10000 -o out/serve.json

--burst N sends N requests at once instead (the rows' questions, cycling), each from a client
of its own that retries a 429 or 503 after the Retry-After it carries: it prints the first
answers by status, the slowest first 200 and first refusal, the time until every request is
answered, and questions/s. With --serve the server is this process's (its --timeout, warmed up
as jev serve is) and jev decide's run is the baseline; with --url it is any running System One
server (--api-key its key, if it has keys), and --sigterm PID sends that process SIGTERM once every request was
sent and --sigterm-after passed (a drain measured from outside).

  jev bench -t 2 -i burst.jsonl --serve --burst 48 --timeout 20s
  jev serve --port 8080 & pid=$!
  jev bench -i burst.jsonl --burst 24 --url http://127.0.0.1:8080 --sigterm $pid`

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("bench")
	var mf modelFlags
	mf.register(fs)
	mf.registerDecoding(fs)
	var in, out, contractName, pathsFlag, llamaBench string
	var limit int
	cli.String(fs, &in, "i,input", "examples/tickets.jsonl", "rows `file` (JSONL)")
	cli.String(fs, &contractName, "contract", "direct", "`contract`: direct (direct-options-v1) or binary (binary-candidates-v1)")
	cli.String(fs, &out, "o,output", "", "write the figures to this JSON `file` and a chart beside it (.svg)")
	cli.String(fs, &pathsFlag, "paths", "prepare,engine,packed,sequential,http,hardware", "the `paths` to run, comma-separated")
	cli.String(fs, &llamaBench, "llama-bench", "", "llama.cpp's llama-bench `binary` for the hardware path (default: the one make server built)")
	cli.Int(fs, &limit, "n,rows", 0, "use only the first `n` rows (0: all)")
	var serve bool
	var clients, requests int
	cli.Bool(fs, &serve, "serve", "measure jev serve under load against jev decide on the same typed rows (-i)")
	cli.Int(fs, &clients, "clients", 8, "with --serve: concurrent `clients`")
	cli.Int(fs, &requests, "requests", 0, "with --serve: `requests` in all, cycling through the rows (0: one a row)")
	var burst, sigterm int
	var burstURL string
	var timeout, sigtermAfter time.Duration
	cli.Int(fs, &burst, "burst", 0, "send `n` requests at once (with --serve or --url), each retrying as told")
	cli.String(fs, &burstURL, "url", "", "with --burst: the running server's root `URL` (else --serve's own)")
	cli.Duration(fs, &timeout, "timeout", 0, "with --serve --burst: the server's request timeout (default jev serve's)")
	cli.Int(fs, &sigterm, "sigterm", 0, "with --url: send SIGTERM to this `pid` once every request was sent")
	cli.Duration(fs, &sigtermAfter, "sigterm-after", time.Second, "with --sigterm: how long after the last request was sent")
	var sf sweepFlags
	cli.String(fs, &sf.scorings, "scorings", "", "measure bias control instead of the paths: decide the rows under each of these `scorings` (raw, pride, cyclic, permute-N, pride+permute-N, each with or without +detect; detect is raw+detect), comma-separated; ratios are against the first")
	cli.Int(fs, &sf.block, "block", 10, "with --scorings: `rows` each scoring decides in turn before the next block")
	cli.String(fs, &sf.priorFile, "prior", "", "with --scorings: PriDe's prior `file` for the pride scorings")
	cli.String(fs, &sf.results, "results", "", "with --scorings: write each scoring's records to `dir`/<scoring>.jsonl")
	if err := cli.Parse(fs, args, stderr, benchSynopsis); err != nil {
		return err
	}
	pathsSet := false
	fs.Visit(func(f *flag.Flag) { pathsSet = pathsSet || f.Name == "paths" })
	logger := newLogger(stderr, mf.verbose)
	setNativeLogger(logger)
	ctr, err := parseContract(contractName)
	if err != nil {
		return err
	}
	if burstURL != "" {
		if serve || burst <= 0 {
			return cli.Usage(errors.New("--url measures a running server with --burst N (without --serve)"))
		}
		return runBurstBench(ctx, burstURL, mf.apiKey, in, limit, burst, sigterm, sigtermAfter, out, stdout, stderr)
	}
	if serve {
		if pathsSet || sf.scorings != "" {
			return cli.Usage(errors.New("--serve, --paths and --scorings measure different things: give one"))
		}
		return runServeBench(ctx, &mf, in, limit, bench.ServeConfig{Clients: clients, Requests: requests, Burst: burst, Timeout: timeout}, out, stdout, stderr)
	}
	if burst > 0 || sigterm > 0 {
		return cli.Usage(errors.New("--burst goes with --serve or --url"))
	}
	if sf.scorings != "" {
		if pathsSet {
			return cli.Usage(errors.New("--scorings and --paths measure different things: give one"))
		}
		if ctr != gojev.Direct {
			return cli.Usage(errors.New("--scorings measures the direct contract's bias control: drop --contract binary"))
		}
		rows, lines, err := readRows(in)
		if err != nil {
			return err
		}
		if limit > 0 && limit < len(rows) {
			rows, lines = rows[:limit], lines[:limit]
		}
		return runSweep(ctx, sf, &mf, in, rows, lines, out, stdout, stderr)
	}
	if sf.results != "" || sf.priorFile != "" {
		return cli.Usage(errors.New("--results and --prior go with --scorings"))
	}
	paths := strings.Split(pathsFlag, ",")
	for _, p := range paths {
		if !slices.Contains(bench.PathNames, p) {
			return cli.Usage(fmt.Errorf("--paths: unknown path %q", p))
		}
	}
	rows, _, err := readRows(in)
	if err != nil {
		return err
	}
	if limit > 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	opts, err := mf.options()
	if err != nil {
		return err
	}
	model, err := mf.modelPath()
	if err != nil {
		return err
	}
	opts.Contract = ctr
	rep, err := bench.Measure(ctx, bench.Config{Model: model, Rows: rows, Paths: paths, Base: opts, Threads: mf.threads,
		Runtime: mf.runtime, APIKey: mf.key(), NProbs: mf.nProbs, LlamaBench: llamaBench, Log: stderr})
	if err != nil {
		return err
	}
	rep.WriteText(stdout)
	if out != "" {
		svg, err := rep.Save(out)
		if err != nil {
			return err
		}
		if svg == "" {
			fmt.Fprintf(stderr, "bench: wrote %s\n", out)
		} else {
			fmt.Fprintf(stderr, "bench: wrote %s and %s\n", out, svg)
		}
	}
	return nil
}

// typedRows reads a file of typed rows, the first limit (0: all).
func typedRows(in string, limit int) ([][]byte, error) {
	data, err := os.ReadFile(in)
	if err != nil {
		return nil, cli.Usage(err)
	}
	var rows [][]byte
	for _, l := range bytes.Split(data, []byte("\n")) {
		if l = bytes.TrimSpace(l); len(l) > 0 {
			rows = append(rows, l)
		}
	}
	if limit > 0 && limit < len(rows) {
		rows = rows[:limit]
	}
	if len(rows) == 0 {
		return nil, cli.Usage(fmt.Errorf("-i %s: no typed rows", in))
	}
	return rows, nil
}

// runServeBench is jev bench --serve.
func runServeBench(ctx context.Context, mf *modelFlags, in string, limit int, cfg bench.ServeConfig, out string, stdout, stderr io.Writer) error {
	rows, err := typedRows(in, limit)
	if err != nil {
		return err
	}
	d, err := mf.open(ctx, stderr, gojev.Options{Debias: debias.None})
	if err != nil {
		return err
	}
	defer d.Close()
	cfg.Decider, cfg.Rows, cfg.Log = d, rows, stderr
	rep, err := bench.MeasureServe(ctx, cfg)
	if err != nil {
		return err
	}
	rep.WriteText(stdout)
	return writeJSONFile(out, rep)
}

// runBurstBench is jev bench --burst N --url URL.
func runBurstBench(ctx context.Context, url, key, in string, limit, n, pid int, after time.Duration, out string, stdout, stderr io.Writer) error {
	rows, err := typedRows(in, limit)
	if err != nil {
		return err
	}
	cfg := bench.BurstConfig{URL: url, APIKey: key, Log: stderr}
	for i := range n {
		body, q, err := bench.RequestOf(rows[i%len(rows)])
		if err != nil {
			return cli.Usage(fmt.Errorf("-i %s: row %d: %w", in, i%len(rows)+1, err))
		}
		cfg.Bodies, cfg.Questions = append(cfg.Bodies, body), append(cfg.Questions, q)
	}
	if pid > 0 {
		p, err := os.FindProcess(pid)
		if err != nil {
			return cli.Usage(fmt.Errorf("--sigterm %d: %w", pid, err))
		}
		cfg.Delay = after
		cfg.AfterSent = func() {
			fmt.Fprintf(stderr, "bench: SIGTERM to %d\n", pid)
			_ = p.Signal(syscall.SIGTERM)
		}
	}
	fmt.Fprintf(stderr, "bench: %d requests at once to %s ...\n", n, url)
	rep, err := bench.MeasureBurst(ctx, cfg)
	if err != nil {
		return err
	}
	rep.WriteText(stdout)
	return writeJSONFile(out, rep)
}

// writeJSONFile writes v as indented JSON to path ("" writes nothing).
func writeJSONFile(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
