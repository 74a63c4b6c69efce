package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/decide"
	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

// The rendering and checking below repeat package decide's (unexported) steps exactly: the
// same special-text refusal, the same render options, the same tokenizer settings.

func (e *Engine) prepareTemplate() error {
	source := e.opts.ChatTemplate
	if source == "" {
		s, ok, err := e.model.ChatTemplate("")
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: %s has no tokenizer.chat_template; set Options.ChatTemplate", decide.ErrNoTemplate, e.model.Path())
		}
		source = s
	}
	tmpl, err := render.Parse(source)
	if err != nil {
		return err
	}
	bos, err := e.model.Vocab().BOSText()
	if err != nil {
		return err
	}
	eos, err := e.model.Vocab().EOSText()
	if err != nil {
		return err
	}
	kwargs := e.opts.ChatTemplateKwargs
	if kwargs == nil {
		kwargs = decide.DefaultKwargs()
	}
	e.tmpl = tmpl
	e.renderOpt = render.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos, Kwargs: kwargs, Now: e.opts.TemplateTime}
	return nil
}

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
	rm := make([]render.Message, len(msgs))
	for i, m := range msgs {
		if err := e.checkSpecialText(m.Content); err != nil {
			return Prompt{}, fmt.Errorf("%w in the %s message", err, m.Role)
		}
		rm[i] = render.Message{Role: m.Role, Content: m.Content}
	}
	text, err := e.tmpl.Render(rm, e.renderOpt)
	if err != nil {
		return Prompt{}, err
	}
	toks, err := verify(text)
	if err != nil {
		return Prompt{}, err
	}
	if e.lctx != nil && len(toks) > e.opts.NCtx-1 {
		return Prompt{}, &decide.PromptTooLongError{NTokens: len(toks), NCtx: e.opts.NCtx - 1, NCtxTrain: e.nCtxTrain}
	}
	return Prompt{Text: text, SHA256: contract.PromptSHA256(text), Tokens: toks, NTokens: len(toks)}, nil
}

// checkSpecialText refuses content whose tokens change when special-token text is parsed
// (decide's check: such text would become control tokens inside the prompt).
func (e *Engine) checkSpecialText(content string) error {
	v := e.model.Vocab()
	plain, err := v.Tokenize(content, false, false)
	if err != nil {
		return err
	}
	special, err := v.Tokenize(content, false, true)
	if err != nil {
		return err
	}
	if slices.Equal(plain, special) {
		return nil
	}
	for _, t := range special {
		shown, err1 := v.TokenToPiece(t, true)
		hidden, err2 := v.TokenToPiece(t, false)
		if err1 == nil && err2 == nil && shown != hidden {
			return fmt.Errorf("%w %q", decide.ErrSpecialText, shown)
		}
	}
	return decide.ErrSpecialText
}

func (e *Engine) newJob(ctx context.Context, row contract.Row) (*job, error) {
	start := time.Now()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	ps, err := e.Prompts(row)
	if err != nil {
		return nil, err
	}
	j := &job{ctx: ctx, row: row, start: start, left: len(ps), done: make(chan struct{})}
	for _, p := range ps {
		j.prompts = append(j.prompts, &prompt{job: j, Prompt: p})
	}
	return j, nil
}

// vocabTokenizer adapts a llama.Vocab to contract.Tokenizer as decide does: add_special=false,
// parse_special=true; detokenize renders special tokens.
type vocabTokenizer struct{ v *llama.Vocab }

func (t vocabTokenizer) Tokenize(text string) ([]int32, error) {
	return t.v.Tokenize(text, false, true)
}

func (t vocabTokenizer) Detokenize(tokens []int32) (string, error) {
	return t.v.Detokenize(tokens, false, true)
}
