package gojev

import (
	"context"
	"fmt"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// noulCall is a noul question in flight: its one job and the request number it is served by.
type noulCall struct {
	j        *job
	seq      uint64
	question string // its own calibration's scoring (finishAs), or ""
}

// noulTexts are a noul question's instructions, true and false as the prompt writes them.
func noulTexts(q Noul) ([3]string, error) {
	var texts [3]string
	for i, v := range []any{q.Instructions, q.True, q.False} {
		var err error
		if texts[i], err = questionText(v); err != nil {
			return texts, fmt.Errorf("%w: %w", ErrQuestion, err)
		}
	}
	if texts == [3]string{} {
		return texts, fmt.Errorf("%w: a noul question needs instructions or criteria", ErrQuestion)
	}
	return texts, nil
}

// checkNoul checks what a noul question can be refused for before its prompt is rendered:
// ErrQuestion for an empty name or a question that is not JSON or is empty;
// contract.ErrBinarySlot when the model cannot spell yes or no as one token (its start-up
// checks found no yes/no slots).
func (d *Decider) checkNoul(name string, q Noul) error {
	if name == "" {
		return fmt.Errorf("%w: an empty name", ErrQuestion)
	}
	if d.bslotsErr != nil {
		return d.bslotsErr
	}
	_, err := noulTexts(q)
	return err
}

// noulJob prepares a noul question's prompt (contract.NoulMessages of the state's evidence),
// read as the binary contract reads yes and no, without enqueueing it. Errors: checkNoul's;
// the prompt's (longer than n_ctx, special text, the boundary); ctx's.
func (d *Decider) noulJob(ctx context.Context, name string, state any, q Noul) (*job, error) {
	if err := d.checkNoul(name, q); err != nil {
		return nil, err
	}
	texts, _ := noulTexts(q)
	row := contract.Row{ID: name, State: state}
	return d.newJobOf(ctx, row, jobNoul, func() ([]Prompt, error) {
		evidence, err := contract.EvidenceJSON(state)
		if err != nil {
			return nil, err
		}
		tok := backend.Tokenizer(ctx, d.rt)
		p, err := d.prompt(ctx, contract.NoulMessages(evidence, texts[0], texts[1], texts[2]), func(text string) ([]int32, error) {
			return contract.VerifyBinaryBoundary(tok, text, d.bslots)
		})
		p.ids = contract.BinaryIDs(d.bslots)
		return []Prompt{p}, err
	})
}

// endNoul waits for a noul question's readout and finishes its result as a row's is finished
// (Decider.finish: calibration under the "noul" scoring, Uncalibrated, abstention).
func (d *Decider) endNoul(ctx context.Context, c *noulCall) (*Result, error) {
	res, err := d.wait(ctx, c.j)
	if err != nil {
		return nil, err
	}
	return d.finishAs(res, c.question), nil
}
