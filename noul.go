package gojev

import (
	"context"
	"fmt"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// noulCall is a noul question in flight: its one job.
type noulCall struct{ j *job }

// beginNoul prepares and enqueues a noul question's prompt (contract.NoulMessages of the
// state's evidence), read as the binary contract reads yes and no. Errors: ErrQuestion for a
// question that is not JSON; contract.ErrBinarySlot when the model cannot spell yes or no as
// one token (its start-up checks found no yes/no slots); the prompt's (too long, special text,
// the boundary); ctx's and ErrClosed.
func (d *Decider) beginNoul(ctx context.Context, name string, state any, q Noul) (*noulCall, error) {
	d.preparingAdd(1)
	defer d.preparingAdd(-1)
	if name == "" {
		return nil, fmt.Errorf("%w: an empty name", ErrQuestion)
	}
	if d.bslotsErr != nil {
		return nil, d.bslotsErr
	}
	var texts [3]string
	for i, v := range []any{q.Instructions, q.True, q.False} {
		var err error
		if texts[i], err = questionText(v); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrQuestion, err)
		}
	}
	if texts == [3]string{} {
		return nil, fmt.Errorf("%w: a noul question needs instructions or criteria", ErrQuestion)
	}
	row := contract.Row{ID: name, State: state}
	j, err := d.newJobOf(ctx, row, jobNoul, func() ([]Prompt, error) {
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
	if err != nil {
		return nil, err
	}
	if err := d.enqueue(ctx, d.next.Add(1), j); err != nil {
		return nil, err
	}
	return &noulCall{j: j}, nil
}

// endNoul waits for a noul question's readout.
func (d *Decider) endNoul(ctx context.Context, c *noulCall) (*Result, error) {
	return d.wait(ctx, c.j)
}
