package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/gojev/gojev/contract"
)

const renderSynopsis = `Usage: jev render -m MODEL.gguf [-i rows.jsonl] [flags]

Renders each row's direct-options-v1 prompt through the model's chat template and tokenizes
it, without decoding: one JSON line per row with "prompt", "prompt_sha256" and
"n_prompt_tokens" (or "error"). Use it to inspect and hash prompts.`

type renderRecord struct {
	ID            any    `json:"id"`
	PromptVersion string `json:"prompt_version"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	Prompt        string `json:"prompt"`
}

func runRender(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	var mf modelFlags
	mf.register(fs)
	var in string
	stringFlag(fs, &in, "i,input", "", "rows `file` (JSONL; default stdin)")
	if err := parseFlags(fs, args, stderr, renderSynopsis); err != nil {
		return err
	}
	r, closeIn, err := openInput(in, stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	d, err := mf.open(stderr)
	if err != nil {
		return err
	}
	defer d.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	enc := newLineEncoder()
	for lineNo := 1; ; lineNo++ {
		line, readErr := br.ReadBytes('\n')
		if len(line) == 0 && readErr != nil {
			if errors.Is(readErr, io.EOF) {
				return nil
			}
			return readErr
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		var rec any
		row, err := contract.ParseRow(bytes.TrimSpace(line))
		if err == nil {
			p, rerr := d.Render(row)
			if err = rerr; err == nil {
				rec = renderRecord{ID: row.IDJSON(), PromptVersion: contract.PROMPT_VERSION, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens, Prompt: p.Text}
			}
		}
		if err != nil {
			rec = errorRecord{ID: row.IDJSON(), Line: lineNo, Error: err.Error()}
		}
		b, err := enc.encode(rec)
		if err != nil {
			return err
		}
		if _, err := stdout.Write(b); err != nil {
			return fmt.Errorf("writing: %w", err)
		}
		if errors.Is(readErr, io.EOF) {
			return nil
		}
	}
}
