package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/cli"
)

const checkSynopsis = `Usage: jev check [-m MODEL.gguf] [flags]

Runs the start-up checks a model must pass before it is scored: the sixteen answer slots
A..P are single, distinct tokens that decode back to "ABCDEFGHIJKLMNOP", and appending a
letter to a rendered sample prompt never changes the prompt's tokens (the boundary check).
Prints the slots (token ids and pieces), the chat template's SHA-256 and the boundary result,
and, in-process, the backend plugins loaded (--plugin, $GOJEV_PLUGINS), the compute devices
llama.cpp found and which of them decides.
Exits 1, saying why, when the model fails.`

func runCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("check")
	var mf modelFlags
	mf.register(fs)
	if err := cli.Parse(fs, args, stderr, checkSynopsis); err != nil {
		return err
	}
	d, err := mf.open(ctx, stderr, gojev.Options{})
	if err != nil {
		return err
	}
	defer d.Close()
	c := d.Check()
	printInProcess(stdout, d, mf.nGPULayers)
	fmt.Fprintf(stdout, "backend          %s, renderer %s, template_date %s\n", c.Backend, c.Renderer, c.TemplateDate)
	fmt.Fprintf(stdout, "prompt_version   %s\n", c.PromptVersion)
	if c.TemplateSHA256 != "" {
		fmt.Fprintf(stdout, "template_sha256  %s\n", c.TemplateSHA256)
	}
	fmt.Fprintf(stdout, "answer slots     ")
	for i, s := range c.Slots {
		if i > 0 {
			fmt.Fprint(stdout, " ")
		}
		fmt.Fprintf(stdout, "%s=%d:%s", s.Letter, s.Token, strconv.Quote(s.Piece))
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "slots            ok: 16 single tokens, distinct, decode to %q\n", contract.Letters)
	fmt.Fprintf(stdout, "boundary         ok on the sample prompt (%d tokens, sha256 %s)\n", c.SampleTokens, c.SamplePromptSHA256)
	return nil
}
