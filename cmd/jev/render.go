package main

import (
	"context"
	"fmt"
	"io"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
)

const renderSynopsis = `Usage: jev render [-m MODEL.gguf] [-i rows.jsonl] [flags]

Renders each row's direct-options-v1 prompt through the model's chat template and tokenizes
it, without decoding: one JSON line per row with "prompt", "prompt_sha256" and
"n_prompt_tokens" (or "error"). Use it to inspect and hash prompts. --contract guarded
renders direct-options-guarded-v1 (the seed's guard sentence in the system text) instead;
--detect the injection detector's prompt of each row's evidence (injection-check-v1).`

type renderRecord struct {
	ID            any    `json:"id"`
	PromptVersion string `json:"prompt_version"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	Renderer      string `json:"renderer"`
	TemplateDate  string `json:"template_date"`
	Prompt        string `json:"prompt"`
}

func runRender(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("render")
	var mf modelFlags
	mf.register(fs)
	var in, format, contractName string
	var detect bool
	stringFlag(fs, &in, "i,input", "", "rows `file` (JSONL; default stdin)")
	stringFlag(fs, &contractName, "contract", "direct", "`contract`: direct (direct-options-v1) or guarded (direct-options-guarded-v1)")
	boolFlag(fs, &detect, "detect", "render the injection detector's prompt of each row's evidence (injection-check-v1) instead")
	stringFlag(fs, &format, "format", "jsonl", "output `format`: jsonl (one JSON object a row) or text (each prompt as the model reads it, under a ### header with its id, token count and sha256)")
	if err := parseFlags(fs, args, stderr, renderSynopsis); err != nil {
		return err
	}
	encode := recordEncoder(batch.JSONLines())
	switch format {
	case "jsonl":
	case "text":
		encode = textEncoder(false)
	default:
		return usageError{fmt.Errorf("--format %q: want jsonl or text", format)}
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
		return usageError{fmt.Errorf("--contract binary has one prompt per option: jev render shows the direct and guarded contracts' one prompt")}
	}
	d, err := mf.open(ctx, stderr, gojev.Options{Contract: c, Detect: detect})
	if err != nil {
		return err
	}
	defer d.Close()
	return batch.Transform(ctx, r, stdout, encode, func(line []byte, lineNo int) (any, error) {
		row, err := contract.ParseRow(line)
		if err == nil {
			var ps []gojev.Prompt
			version := d.Check().PromptVersion
			if detect {
				var p gojev.Prompt
				p, err = d.RenderDetect(ctx, row)
				ps, version = []gojev.Prompt{p}, contract.DetectPromptVersion
			} else {
				ps, err = d.Render(ctx, row)
			}
			if err == nil {
				p := ps[0]
				return renderRecord{ID: row.IDJSON(), PromptVersion: version, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
					Renderer: d.Check().Renderer, TemplateDate: d.Check().TemplateDate, Prompt: p.Text}, nil
			}
		}
		return batch.ErrorRecord{ID: row.IDJSON(), Line: lineNo, Error: err.Error()}, nil
	})
}
