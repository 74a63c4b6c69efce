package gojev

import (
	"context"
	"fmt"
)

// Decide decides one row. It validates the row (contract.Row.Validate), renders and checks
// its prompt(s) (in the calling goroutine, or where preparing overlaps decoding on a preparing
// goroutine: Begin), hands them to the scheduler, which decodes them
// together with other requests' prompts, and waits. Errors are per row and never affect other
// requests: contract.ErrRow (bad options), contract.ErrBoundary, backend.ErrPromptTooLong,
// backend.ErrSpecialText, debias.ErrNoPrior, runtime errors; a cancelled ctx returns at once
// with an error wrapping ctx.Err(); a closed Decider gives ErrClosed.
func (d *Decider) Decide(ctx context.Context, row Row) (*Result, error) {
	c, err := d.Begin(ctx, row)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx)
}

// Call is a decision begun by Begin and not yet waited for. Wait may be called once, from any
// goroutine.
type Call struct {
	d *Decider
	r *request
	// ready is closed when a row prepared on its own goroutine is enqueued (r set) or failed
	// (err set); nil when Begin prepared it.
	ready chan struct{}
	err   error
}

// Begin is the first half of Decide: it validates the row, renders and checks its prompt(s)
// in the calling goroutine and hands them to the scheduler, which serves requests oldest
// first, in the order they were begun (Begin, Decide or DecideAll). A caller that reads rows
// in order and waits for them concurrently (batch.Run) calls Begin in input order, so the
// first row is decoded first whatever the goroutines do. Errors are Decide's for this row.
//
// Where preparing overlaps decoding (every layer on a GPU: the CPU decodes nothing), Begin
// returns once the row is validated and a preparing goroutine has taken it: rows begun one
// after another are rendered and checked on up to max(2, GOMAXPROCS) cores at once, and still
// decoded in the order they were begun. The row's other errors (render, checks) then come from
// Wait. Begin blocks while every preparing goroutine is busy.
func (d *Decider) Begin(ctx context.Context, row Row) (*Call, error) {
	if !d.serial {
		return d.beginAsync(ctx, row)
	}
	r, err := d.begin(ctx, row, d.opts.Debias, d.opts.Permute)
	if err != nil {
		return nil, err
	}
	return &Call{d: d, r: r}, nil
}

// beginAsync is Begin where preparing overlaps decoding: the row validated and numbered here,
// prepared and enqueued on a goroutine of its own once one of d.preparers' slots is free.
func (d *Decider) beginAsync(ctx context.Context, row Row) (*Call, error) {
	d.preparingAdd(1)
	if err := validate(row); err != nil {
		d.preparingAdd(-1)
		return nil, err
	}
	c, seq := &Call{d: d}, d.next.Add(1)
	var err error
	c.ready, err = d.goPrepare(ctx, func() { c.r, c.err = d.beginSeq(ctx, seq, row, d.opts.Debias, d.opts.Permute) })
	if err != nil {
		return nil, err
	}
	return c, nil
}

// goPrepare runs prepare on a preparing goroutine once one of d.preparers' slots is free, and
// returns a channel closed when it has run. The caller counted the work in d.preparing
// (preparingAdd(1)), and numbered its requests (d.next) in the order of its calls; goPrepare
// uncounts it when prepare returns, or at once when ctx is done or the Decider closes first
// (its error, wrapped).
func (d *Decider) goPrepare(ctx context.Context, prepare func()) (chan struct{}, error) {
	select {
	case d.preparers <- struct{}{}:
	case <-ctx.Done():
		d.preparingAdd(-1)
		return nil, fmt.Errorf("gojev: %w", ctx.Err())
	case <-d.quit:
		d.preparingAdd(-1)
		return nil, fmt.Errorf("gojev: %w", ErrClosed)
	}
	ready := make(chan struct{})
	go func() {
		defer close(ready)
		defer d.preparingAdd(-1)
		prepare()
		<-d.preparers
	}()
	return ready, nil
}

// Wait waits for a begun decision and returns its Result, with Decide's errors; a cancelled
// ctx returns at once with an error wrapping ctx.Err().
func (c *Call) Wait(ctx context.Context) (*Result, error) {
	if c.ready != nil {
		select {
		case <-c.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("gojev: %w", ctx.Err())
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	return c.d.end(ctx, c.r)
}

// DecideAll decides rows together and returns one Outcome per row, in input order. Rows are
// begun in order (Begin: prepared one after another, or where preparing overlaps decoding
// several at once) and handed to the scheduler as they are ready, so rows next to each other
// share decodes. A bad row is that row's Outcome.Err. The error is non-nil only when ctx was
// cancelled (it wraps ctx.Err(); rows not finished then carry the same error) or the Decider
// was closed.
func (d *Decider) DecideAll(ctx context.Context, rows []Row) ([]Outcome, error) {
	out := make([]Outcome, len(rows))
	calls := make([]*Call, len(rows))
	d.preparingAdd(int64(len(rows)))
	for i, row := range rows {
		if err := ctx.Err(); err != nil {
			for k := i; k < len(rows); k++ {
				out[k].Err = fmt.Errorf("gojev: %w", err)
			}
			d.preparingAdd(-int64(len(rows) - i))
			break
		}
		calls[i], out[i].Err = d.Begin(ctx, row)
		d.preparingAdd(-1)
	}
	for i, c := range calls {
		if c != nil {
			out[i].Result, out[i].Err = c.Wait(ctx)
		}
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("gojev: %w", err)
	}
	d.closeMu.Lock()
	closed := d.closed
	d.closeMu.Unlock()
	if closed {
		return out, fmt.Errorf("gojev: %w", ErrClosed)
	}
	return out, nil
}
