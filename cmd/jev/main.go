// Command jev makes LLM decisions in-process: it loads a GGUF model through llama.cpp, renders
// each row's decision prompt through the model's own chat template and reads the next-token
// logits of the answer letters.
//
//	jev decide [-m MODEL.gguf] [-i rows.jsonl] [-o out.jsonl] [--debias pride]
//	jev render [-m MODEL.gguf] -i rows.jsonl
//	jev check  [-m MODEL.gguf]
//	jev parity [-m MODEL.gguf] [-i rows.jsonl] [--runtime URL]
//	jev bench  [-m MODEL.gguf] [-i rows.jsonl] [--contract binary] [-o bench.json]
//	jev decide --shard I/N -o out/part-{shard}.jsonl ...
//	jev merge  -i rows.jsonl out/part-*.jsonl -o merged.jsonl
//	jev report out.jsonl [more.jsonl ...] [--html report.html] [--json report.json]
//	jev calibrate out.jsonl [more.jsonl ...] -o profile.json [--eval held.jsonl]
//	jev redteam -i rows.jsonl -o DIR [--settings pride,pride+permute-2,...]
//	jev serve [-m MODEL.gguf] [--port 8080] [--api-key KEYS]
//
// Run `jev help` or `jev COMMAND -h` for the flags.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/gojev/gojev/internal/cli"
)

const usage = `jev makes LLM decisions in-process with llama.cpp.

Usage:
  jev decide [-i rows.jsonl] [-o out.jsonl]        decide every row (JSONL in; JSONL out, text on a terminal)
  jev decide --debias pride -i rows.jsonl ...      the same with position-bias control (PriDe)
  jev decide --shard I/N -o out/part-{shard}.jsonl ...
                                                   decide one shard of the rows (--shard auto: a Slurm
                                                   array task or a Kubernetes Indexed Job's index)
  jev merge -i rows.jsonl out/part-*.jsonl -o merged.jsonl
                                                   join the shards' results in input order, checked
  jev report out.jsonl [more.jsonl ...] [--html r.html]
                                                   accuracy, F1, confusion, letters, calibration, side by side
  jev calibrate out.jsonl -o profile.json          fit calibrated probabilities from labelled results;
                                                   then jev decide --calibration profile.json [--max-error 0.1]
  jev redteam -i rows.jsonl -o DIR [--settings …]  attack labelled rows (prompt injection, five families) and
                                                   measure how far the attacks steer each setting's decisions
  jev serve [--port 8080] [--api-key KEYS]         serve the System One API (POST /v1/systemone: typed
                                                   choice, score and noul questions) from the model
  jev render [-i rows.jsonl] [--format text]       each row's rendered prompt and its hash
  jev check                                        run the start-up checks and print the answer slots
  jev parity [-i rows.jsonl] [--runtime URL]       compare prompts, tokens, log-probs and choices with llama-server
  jev bench  [-i rows.jsonl] [-o bench.json]       measure the engine, in-process and HTTP paths
  jev quantize IN.gguf OUT.gguf [--type q4_k_m]    quantize a model's weights, as llama-quantize does
  jev version                                      gojev's version, the llama.cpp pin, the default model

decide, render, check, parity, bench, redteam and serve take -m MODEL.gguf; without it, $GOJEV_MODEL, else the default model
that "make model" fetched (Qwen2.5-Coder-1.5B-Instruct Q4_K_M).

A row is one JSON object per line:
  {"id": "r1", "state": {"message": "..."}, "question": "...",
   "options": [{"id": "refund", "description": "..."}, ...], "label": "refund"}
(1 to 256 options: more than 16 are ranked by embedding and the best 16 decided under the
binary contract, one yes/no prompt each, unless --many binary (every option; the default
over --runtime URL) or --many knockout; "label" is optional and only used to report accuracy).

Run "jev COMMAND -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run executes one jev command and returns the process exit code: 0 on success, 1 when the
// command failed, 2 for a usage error.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "decide":
		err = runDecide(ctx, args[1:], stdin, stdout, stderr)
	case "render":
		err = runRender(ctx, args[1:], stdin, stdout, stderr)
	case "check":
		err = runCheck(ctx, args[1:], stdout, stderr)
	case "parity":
		err = runParity(ctx, args[1:], stdout, stderr)
	case "redteam":
		err = runRedteam(ctx, args[1:], stdout, stderr)
	case "bench":
		err = runBench(ctx, args[1:], stdout, stderr)
	case "report":
		err = runReport(ctx, args[1:], stdout, stderr)
	case "merge":
		err = runMerge(ctx, args[1:], stdout, stderr)
	case "calibrate":
		err = runCalibrate(ctx, args[1:], stdout, stderr)
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "quantize":
		err = runQuantize(ctx, args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	case "version", "--version", "-version":
		printVersion(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "jev: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	var ue cli.UsageError
	switch {
	case err == nil, errors.Is(err, cli.ErrHelp):
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "jev %s: %v\n", args[0], ue)
		return 2
	default:
		fmt.Fprintf(stderr, "jev %s: %v\n", args[0], err)
		return 1
	}
}

func newLogger(stderr io.Writer, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}
