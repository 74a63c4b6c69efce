package gojev

import (
	"context"
	"fmt"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// Render renders a row's prompts under the Decider's contract without decoding them: one
// under Direct, one per option under Binary (and for a row of more than 16 options under
// Direct with KnockoutOptions.Method ManyBinary or ManyShortlist, whose kept options get
// these prompts), in option order. Each is checked as a decision
// checks it: the row is valid (contract.Row.Validate), no message contains special-token text
// (backend.CheckSpecialText), and the answer boundary holds (contract.VerifyBoundary,
// contract.VerifyBinaryBoundary). Errors wrap contract.ErrRow, backend.ErrSpecialText,
// contract.ErrBoundary, render errors, runtime errors.
func (d *Decider) Render(ctx context.Context, row Row) ([]Prompt, error) {
	if err := validate(row); err != nil {
		return nil, err
	}
	return d.renderAs(ctx, row, d.shortlistRow(len(row.Options)))
}

// render is Render for a row already validated (a decision's row, its permutations and
// knockout passes: begin validates the row once).
func (d *Decider) render(ctx context.Context, row Row) ([]Prompt, error) {
	return d.renderAs(ctx, row, false)
}

// renderAs is render, under the binary contract whatever the Decider's when asBinary (a
// shortlist's rerank: one binary-candidates-v1 prompt per option).
func (d *Decider) renderAs(ctx context.Context, row Row, asBinary bool) ([]Prompt, error) {
	sets, binary, err := d.rowMessagesAs(row, asBinary)
	if err != nil {
		return nil, err
	}
	tok := backend.Tokenizer(ctx, d.rt)
	var out []Prompt
	for i, msgs := range sets {
		if !binary {
			p, err := d.prompt(ctx, msgs, func(text string) ([]int32, error) { return contract.VerifyBoundary(tok, text, d.slots) })
			if err != nil {
				return nil, err
			}
			p.ids = d.slots[:len(row.Options)]
			out = append(out, p)
			continue
		}
		p, err := d.prompt(ctx, msgs, func(text string) ([]int32, error) { return contract.VerifyBinaryBoundary(tok, text, d.bslots) })
		if err != nil {
			return nil, fmt.Errorf("candidate %q: %w", row.Options[i].ID, err)
		}
		p.ids = contract.BinaryIDs(d.bslots)
		out = append(out, p)
	}
	return out, nil
}

// rowMessages are the chat messages of a row's prompts under the Decider's contract: one set
// under a direct contract; under the binary contract (and for a row of more than 16 options
// under ManyBinary) one per option, in option order (binary true).
func (d *Decider) rowMessages(row Row) (sets [][]contract.ChatMessage, binary bool, err error) {
	return d.rowMessagesAs(row, false)
}

// rowMessagesAs is rowMessages, under the binary contract when asBinary.
func (d *Decider) rowMessagesAs(row Row, asBinary bool) (sets [][]contract.ChatMessage, binary bool, err error) {
	c := d.opts.Contract
	if asBinary || d.binaryRow(len(row.Options)) {
		c = Binary
	}
	evidence, err := contract.EvidenceJSON(row.State)
	if err != nil {
		return nil, false, err
	}
	if c == Binary {
		for _, o := range row.Options {
			sets = append(sets, contract.BinaryMessages(evidence, row.Question, o))
		}
		return sets, true, nil
	}
	messages := contract.DirectMessagesReusing
	switch c {
	case Guarded:
		messages = contract.GuardedMessages
	case Spotlight:
		messages = contract.SpotlightMessages
	}
	msgs, err := messages(evidence, row.Question, row.Options)
	return [][]contract.ChatMessage{msgs}, false, err
}

func (d *Decider) prompt(ctx context.Context, msgs []contract.ChatMessage, verify func(string) ([]int32, error)) (Prompt, error) {
	for _, m := range msgs {
		if err := backend.CheckSpecialText(ctx, d.rt, m.Content); err != nil {
			return Prompt{}, fmt.Errorf("%w in the %s message", err, m.Role)
		}
	}
	text, err := d.rt.Render(ctx, msgs)
	if err != nil {
		return Prompt{}, err
	}
	toks, err := verify(text)
	if err != nil {
		return Prompt{}, err
	}
	return d.checkedPrompt(text, toks)
}

// checkedPrompt is the Prompt of text and its tokens, once a runtime that can refuse a prompt
// before decoding it (backend.PromptChecker: empty, longer than n_ctx) has not.
func (d *Decider) checkedPrompt(text string, toks []int32) (Prompt, error) {
	if pc, ok := d.rt.(backend.PromptChecker); ok {
		if err := pc.CheckPrompt(toks); err != nil {
			return Prompt{}, err
		}
	}
	return Prompt{Text: text, SHA256: contract.PromptSHA256(text), Tokens: toks, NTokens: len(toks)}, nil
}

// RenderDetect renders a row's injection-detector prompt (Options.Detect; contract.DetectMessages
// of its evidence) without decoding it, checked as a binary answer's prompt. The Decider must
// have been opened with Options.Detect (its yes/no slots resolved); otherwise ErrOptions.
func (d *Decider) RenderDetect(ctx context.Context, row Row) (Prompt, error) {
	if !d.opts.Detect {
		return Prompt{}, fmt.Errorf("%w: RenderDetect needs Options.Detect", ErrOptions)
	}
	return d.detectPrompt(ctx, row)
}

// detectPrompt renders and checks the injection detector's prompt for a row's evidence
// (contract.DetectMessages), read as a binary answer.
func (d *Decider) detectPrompt(ctx context.Context, row contract.Row) (Prompt, error) {
	evidence, err := contract.EvidenceJSON(row.State)
	if err != nil {
		return Prompt{}, err
	}
	tok := backend.Tokenizer(ctx, d.rt)
	p, err := d.prompt(ctx, contract.DetectMessages(evidence), func(text string) ([]int32, error) {
		return contract.VerifyBinaryBoundary(tok, text, d.bslots)
	})
	if err != nil {
		return Prompt{}, fmt.Errorf("injection detector: %w", err)
	}
	p.ids = contract.BinaryIDs(d.bslots)
	return p, nil
}

func (d *Decider) newJob(ctx context.Context, row contract.Row) (*job, error) {
	return d.newJobOf(ctx, row, jobDecision, func() ([]Prompt, error) { return d.render(ctx, row) })
}

// newDetectJob prepares the injection detector's job for a row (one prompt, detectPrompt).
func (d *Decider) newDetectJob(ctx context.Context, row contract.Row) (*job, error) {
	return d.newJobOf(ctx, row, jobDetect, func() ([]Prompt, error) {
		p, err := d.detectPrompt(ctx, row)
		return []Prompt{p}, err
	})
}

// newJobOf prepares a job of a kind from the prompts prepare renders and checks, timed as
// preparing and, where the CPU decodes, under the CPU lock.
func (d *Decider) newJobOf(ctx context.Context, row contract.Row, kind jobKind, prepare func() ([]Prompt, error)) (*job, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("gojev: %w", err)
	}
	d.lockCPU()
	t0 := time.Now()
	ps, err := prepare()
	d.stats.prepareNS.Add(int64(time.Since(t0)))
	d.unlockCPU()
	if err != nil {
		return nil, err
	}
	j := &job{ctx: ctx, row: row, start: start, left: len(ps), done: make(chan struct{}), kind: kind}
	for _, p := range ps {
		j.prompts = append(j.prompts, &prompt{job: j, Prompt: p})
	}
	return j, nil
}

// decodeMode is the runtime's decode mode (backend.Packer), or "" for one without modes.
func decodeMode(rt backend.Backend) string {
	if pk, ok := rt.(backend.Packer); ok {
		return pk.DecodeMode()
	}
	return ""
}
