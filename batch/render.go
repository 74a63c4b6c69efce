package batch

import (
	"context"
	"encoding/json"
	"io"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
)

// PromptRecord is what Render writes for a row: its prompt as the model reads it (rendered
// through the chat template), the prompt's sha256 and token count, the prompt version, and the
// renderer and template date that made it.
type PromptRecord struct {
	ID            json.RawMessage `json:"id"`
	PromptVersion string          `json:"prompt_version"`
	PromptSHA256  string          `json:"prompt_sha256"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	Renderer      string          `json:"renderer"`
	TemplateDate  string          `json:"template_date"`
	Prompt        string          `json:"prompt"`
}

// Render writes the PromptRecord of every row of in to out, one a line (Transform; encode nil:
// JSON lines), without deciding anything (jev render): the prompt of d's contract, or with
// detect the injection detector's prompt of the row's evidence (injection-check-v1; d opened
// with Options.Detect). A row
// that cannot be rendered gets an ErrorRecord. Under the binary contract a row has one prompt
// per option, and Render writes the first.
func Render(ctx context.Context, d *gojev.Decider, in io.Reader, out io.Writer, detect bool, encode func(rec any) ([]byte, error)) error {
	if encode == nil {
		encode = JSONLines()
	}
	c := d.Check()
	return Transform(ctx, in, out, encode, func(line []byte, lineNo int) (any, error) {
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
				return PromptRecord{ID: row.IDJSON(), PromptVersion: version, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
					Renderer: c.Renderer, TemplateDate: c.TemplateDate, Prompt: p.Text}, nil
			}
		}
		return ErrorRecord{ID: row.IDJSON(), Line: lineNo, Error: err.Error()}, nil
	})
}
