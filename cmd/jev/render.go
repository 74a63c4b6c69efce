package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/internal/jsonl"
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
	encode := jsonl.Encoder()
	switch format {
	case "jsonl":
	case "text":
		encode = textLines(false)
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
	return renderRows(ctx, d, r, stdout, detect, encode)
}

// promptRecord is what jev render writes for a row: its prompt as the model reads it (rendered
// through the chat template), the prompt's sha256 and token count, the prompt version, and the
// renderer and template date that made it.
type promptRecord struct {
	ID            json.RawMessage `json:"id"`
	PromptVersion string          `json:"prompt_version"`
	PromptSHA256  string          `json:"prompt_sha256"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	Renderer      string          `json:"renderer"`
	TemplateDate  string          `json:"template_date"`
	Prompt        string          `json:"prompt"`
}

// renderRows writes the promptRecord of every row of in to out, one a line, encoded by encode,
// without deciding anything: the prompt of d's contract, or with detect the injection
// detector's prompt of the row's evidence (injection-check-v1; d opened with Options.Detect).
// A row that cannot be rendered gets a batch.ErrorRecord. Under the binary contract a row has
// one prompt per option, and renderRows writes the first.
func renderRows(ctx context.Context, d *gojev.Decider, in io.Reader, out io.Writer, detect bool, encode func(rec any) ([]byte, error)) error {
	c := d.Check()
	return jsonl.Transform(ctx, in, out, func(line []byte, lineNo int) ([]byte, error) {
		row, err := contract.ParseRow(line)
		if err == nil {
			var ps []gojev.Prompt
			version := c.PromptVersion
			if detect {
				var p gojev.Prompt
				p, err = d.RenderDetect(ctx, row)
				ps, version = []gojev.Prompt{p}, contract.DetectPromptVersion
			} else {
				ps, err = d.Render(ctx, row)
			}
			if err == nil {
				p := ps[0]
				return encode(promptRecord{ID: row.IDJSON(), PromptVersion: version, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
					Renderer: c.Renderer, TemplateDate: c.TemplateDate, Prompt: p.Text})
			}
		}
		return encode(batch.ErrorRecord{ID: row.IDJSON(), Line: lineNo, Error: err.Error()})
	})
}
