package engine

import (
	"context"
	"fmt"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/decide"
	"github.com/gojev/gojev/llama"
)

func (e *Engine) startupChecks() error {
	var err error
	switch e.opts.Contract {
	case Direct:
		if e.slots, err = contract.ResolveSlots(e.tok); err != nil {
			return fmt.Errorf("the model fails the start-up checks: %w", err)
		}
	case Binary:
		if e.bslots, err = contract.ResolveBinarySlots(e.tok); err != nil {
			return fmt.Errorf("the model fails the start-up checks: %w", err)
		}
	}
	if _, err := e.Prompts(decide.SampleRow()); err != nil {
		return fmt.Errorf("the model fails the start-up checks on the sample row: %w", err)
	}
	return nil
}

// Prompt is one rendered, checked and tokenized prompt.
type Prompt struct {
	Text    string        // the prompt text the model reads
	SHA256  string        // contract.PromptSHA256(Text)
	Tokens  []llama.Token // its tokens (add_special=false, parse_special=true)
	NTokens int           // len(Tokens)
}

// Prompts renders a row's prompts under the engine's contract (one under Direct, one per
// option under Binary, in option order), checks the answer boundary on each
// (contract.VerifyBoundary / contract.VerifyBinaryBoundary) and tokenizes them, without
// decoding. Errors: option-count errors, decide.ErrSpecialText, contract.ErrBoundary,
// decide.ErrPromptTooLong (a prompt needs at most n_ctx-1 tokens), render errors.
func (e *Engine) Prompts(row contract.Row) ([]Prompt, error) {
	if err := contract.CheckOptionCount(len(row.Options)); err != nil && (e.opts.Contract == Direct || len(row.Options) == 0) {
		return nil, err
	}
	var out []Prompt
	switch e.opts.Contract {
	case Direct:
		msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
		if err != nil {
			return nil, err
		}
		p, err := e.prompt(msgs, func(text string) ([]int32, error) { return contract.VerifyBoundary(e.tok, text, e.slots) })
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	case Binary:
		evidence, err := contract.EvidenceJSON(row.State)
		if err != nil {
			return nil, err
		}
		for _, o := range row.Options {
			msgs := contract.BinaryMessages(evidence, row.Question, o)
			p, err := e.prompt(msgs, func(text string) ([]int32, error) { return contract.VerifyBinaryBoundary(e.tok, text, e.bslots) })
			if err != nil {
				return nil, fmt.Errorf("candidate %q: %w", o.ID, err)
			}
			out = append(out, p)
		}
	}
	return out, nil
}

func (e *Engine) prompt(msgs []contract.ChatMessage, verify func(string) ([]int32, error)) (Prompt, error) {
	for _, m := range msgs {
		if err := backend.CheckSpecialText(context.Background(), e.vocab, m.Content); err != nil {
			return Prompt{}, fmt.Errorf("%w in the %s message", err, m.Role)
		}
	}
	text, err := e.tmpl.Render(msgs)
	if err != nil {
		return Prompt{}, err
	}
	toks, err := verify(text)
	if err != nil {
		return Prompt{}, err
	}
	if e.lctx != nil && len(toks) > e.opts.NCtx {
		return Prompt{}, &decide.PromptTooLongError{NTokens: len(toks), NCtx: e.opts.NCtx, NCtxTrain: e.nCtxTrain}
	}
	return Prompt{Text: text, SHA256: contract.PromptSHA256(text), Tokens: toks, NTokens: len(toks)}, nil
}

func (e *Engine) newJob(ctx context.Context, row contract.Row) (*job, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.cpu.Lock()
	t0 := time.Now()
	ps, err := e.Prompts(row)
	e.stats.prepareNS.Add(int64(time.Since(t0)))
	e.cpu.Unlock()
	if err != nil {
		return nil, err
	}
	j := &job{ctx: ctx, row: row, start: start, left: len(ps), done: make(chan struct{})}
	for _, p := range ps {
		j.prompts = append(j.prompts, &prompt{job: j, Prompt: p})
	}
	return j, nil
}
