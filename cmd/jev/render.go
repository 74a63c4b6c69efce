package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/cli"
)

const renderSynopsis = `Usage: jev render [-m MODEL.gguf] [-i rows.jsonl] [flags]

Renders each row's direct-options-v1 prompt through the model's chat template and tokenizes
it, without decoding: one JSON line per row with "prompt", "prompt_sha256" and
"n_prompt_tokens" (or "error"). Use it to inspect and hash prompts. --contract guarded
renders direct-options-guarded-v1 (the seed's guard sentence in the system text), spotlight
direct-options-spotlight-v1 (the evidence datamarked) instead;
--detect the injection detector's prompt of each row's evidence (injection-check-v1).`

func runRender(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("render")
	var mf modelFlags
	mf.register(fs)
	var in, format, contractName string
	var detect bool
	cli.String(fs, &in, "i,input", "", "rows `file` (JSONL; default stdin)")
	cli.String(fs, &contractName, "contract", "direct", "`contract`: direct (direct-options-v1), guarded (direct-options-guarded-v1) or spotlight (direct-options-spotlight-v1)")
	cli.Bool(fs, &detect, "detect", "render the injection detector's prompt of each row's evidence (injection-check-v1) instead")
	cli.String(fs, &format, "format", "jsonl", "output `format`: jsonl (one JSON object a row) or text (each prompt as the model reads it, under a ### header with its id, token count and sha256)")
	if err := cli.Parse(fs, args, stderr, renderSynopsis); err != nil {
		return err
	}
	encode := batch.JSONLines()
	switch format {
	case "jsonl":
	case "text":
		encode = batch.TextLines(false)
	default:
		return cli.Usage(fmt.Errorf("--format %q: want jsonl or text", format))
	}
	r, closeIn, err := openInput(in, stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	c, err := parseContract(contractName)
	if err != nil {
		return err
	}
	if c == gojev.Binary {
		return cli.Usage(fmt.Errorf("--contract binary has one prompt per option: jev render shows the lettered contracts' one prompt"))
	}
	d, err := mf.open(ctx, stderr, gojev.Options{Contract: c, Detect: detect})
	if err != nil {
		return err
	}
	defer d.Close()
	return batch.Render(ctx, d, r, stdout, detect, encode)
}
