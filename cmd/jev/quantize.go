package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/gojev/gojev/internal/cli"
)

const quantizeSynopsis = `Usage: jev quantize IN.gguf OUT.gguf [--type q4_k_m] [-t THREADS]

Writes IN's weights quantized to --type into OUT, as llama.cpp's llama-quantize does
(llama_model_quantize, default parameters), with the llama.cpp jev is built on: a GPU box
without that build turns an f16 model into the Q4_K_M one gojev decides with by default
(scripts/gpu-bench.sh does, for its synthetic model). Types: f16, q8_0, q6_k, q5_k_m, q4_k_m,
q4_0.

  jev quantize synthetic-f16.gguf synthetic-q4_k_m.gguf --type q4_k_m`

func runQuantize(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("quantize")
	var typ string
	var threads int
	cli.String(fs, &typ, "type", "q4_k_m", "the `type` to quantize to")
	cli.Int(fs, &threads, "t,threads", runtime.NumCPU(), "`threads` to quantize on")
	files, err := cli.ParseInterleaved(fs, args, stderr, quantizeSynopsis)
	if err != nil {
		return err
	}
	if len(files) != 2 {
		return cli.Usage(errors.New("give the input and the output model: jev quantize IN.gguf OUT.gguf"))
	}
	in, out := files[0], files[1]
	start := time.Now()
	if err := quantize(in, out, typ, threads); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "quantize: wrote %s (%s) in %.1f s\n", out, typ, time.Since(start).Seconds())
	return nil
}
