package gojev

import (
	"context"
	"fmt"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// request is one row in flight: its jobs and how their results combine.
type request struct {
	seq    uint64 // the order it was asked in (Decider.next): the scheduler serves lower first
	row    contract.Row
	start  time.Time
	method debias.Method
	jobs   []*job // direct: one, or one per shift (jobs[j] is shift shifts[j]); binary: one
	shifts []int  // the cyclic shifts decided (nil: the row's own order only)
	// reversed: jobs[1] is the row with its options in reverse order (a score's rubric read
	// both ways: combineReversed).
	reversed bool
	// levels is the rubric's content-free reading of a reversed request (startLevels).
	levels *flight[[]float64]
	// question: an Ask answer's own calibration, a scoring of Options.QuestionCalibration
	// (finishAs); "" for a row.
	question string
	// Contextual: content-free jobs (one per evidence in debias.ContentFreeEvidence) for the
	// candidates whose content-free p_yes is not cached yet (cfOpts), in that order.
	cf     []*job
	cfOpts []contract.Option
	// detect is the injection detector's job (Options.Detect), nil without it.
	detect *job
	// ko is the knockout of a row with more than contract.MaxOptions options (its group
	// passes in flight); jobs is then empty.
	ko *knockoutRequest
	// sl is the shortlist of a row of more than contract.MaxOptions options under
	// ManyShortlist: jobs[0] is its state's embedding job.
	sl *shortlistRequest
}

// begin prepares and enqueues a row's prompts under method, decided under permute evenly
// spaced cyclic shifts (debias.Shifts: 0 is all k under Cyclic, one decode under PriDe).
// Errors are the row's: bad options, render or check failures, debias.ErrNoPrior; or ctx's and
// ErrClosed.
func (d *Decider) begin(ctx context.Context, row contract.Row, method debias.Method, permute int) (*request, error) {
	d.preparingAdd(1)
	defer d.preparingAdd(-1)
	if err := validate(row); err != nil {
		return nil, err
	}
	return d.beginSeq(ctx, d.next.Add(1), row, method, permute)
}

// beginSeq is begin for a valid row, numbered seq in the scheduler's order: prepareSeq, then
// enqueue.
func (d *Decider) beginSeq(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int) (*request, error) {
	r, err := d.prepareSeq(ctx, seq, row, method, permute, false)
	if err != nil {
		return nil, err
	}
	return r, d.enqueueRequest(ctx, r)
}

// prepareSeq renders and checks every prompt of a valid row, numbered seq, and enqueues none:
// a request whose prompts all passed their checks (enqueueRequest hands them to the
// scheduler). reverse reads the row in the reverse order of its options too (a score's
// rubric; prepareRow).
func (d *Decider) prepareSeq(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int, reverse bool) (*request, error) {
	if len(row.Options) > contract.MaxOptions && d.opts.Contract.lettered() && !d.opts.manyBinary() {
		if d.shortlistRow(len(row.Options)) {
			return d.prepareShortlist(ctx, seq, row, method)
		}
		return d.prepareKnockout(ctx, seq, row, method, permute)
	}
	return d.prepareRow(ctx, seq, row, method, permute, d.opts.Detect, reverse)
}

// enqueueRequest hands a prepared request's jobs to the scheduler: its decision jobs, the
// content-free ones, a knockout's group passes, then the detector's.
func (d *Decider) enqueueRequest(ctx context.Context, r *request) error {
	for _, j := range append(r.jobs, r.cf...) {
		if err := d.enqueue(ctx, r.seq, j); err != nil {
			return err
		}
	}
	if r.ko != nil {
		for _, g := range r.ko.groups {
			if err := d.enqueueRequest(ctx, g); err != nil {
				return err
			}
		}
	}
	if r.detect != nil {
		return d.enqueue(ctx, r.seq, r.detect)
	}
	return nil
}

// rowMethod is the bias control a row of k options gets under method: debias.Default becomes
// PriDe where the Decider holds a prior for k (under a direct contract), else debias.None; a
// row decided under the binary contract by a direct Decider (more than 16 options,
// ManyBinary) gets none of the direct contract's.
func (d *Decider) rowMethod(method debias.Method, k int) debias.Method {
	switch {
	case d.binaryRow(k):
		return debias.None
	case method != debias.Default:
		return method
	case d.opts.Contract.lettered() && k > 1:
		if _, ok := d.prior.Load().For(k); ok {
			return debias.PriDe
		}
	}
	return debias.None
}

// binaryRow reports whether a row of k options is decided under the binary contract by a
// Decider of a direct contract (more than 16 options, KnockoutOptions.Method ManyBinary).
func (d *Decider) binaryRow(k int) bool {
	return k > contract.MaxOptions && d.opts.Contract.lettered() && d.opts.manyBinary()
}

// shortlistRow reports whether a row of k options is decided by shortlist (more than 16
// options under a direct contract, KnockoutOptions.Method ManyShortlist).
func (d *Decider) shortlistRow(k int) bool {
	return k > contract.MaxOptions && d.opts.Contract.lettered() && d.opts.Knockout.Method == ManyShortlist
}

// beginRow is prepareRow, then enqueueRequest.
func (d *Decider) beginRow(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int, detect bool) (*request, error) {
	r, err := d.prepareRow(ctx, seq, row, method, permute, detect, false)
	if err != nil {
		return nil, err
	}
	return r, d.enqueueRequest(ctx, r)
}

// prepareRow is prepareSeq for a valid row of at most contract.MaxOptions options under a
// lettered contract (any count under Binary), with or without the detector's prompt; seq is
// the request's place in the scheduler's order (a knockout's passes share their row's). With
// reverse, a row of 2 or more options under a lettered contract and without cyclic shifts is
// also decided with its options in reverse order (combineReversed).
func (d *Decider) prepareRow(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int, detect, reverse bool) (*request, error) {
	method = d.rowMethod(method, len(row.Options))
	if d.binaryRow(len(row.Options)) && d.bslotsErr != nil {
		return nil, fmt.Errorf("%d options are decided under %s, and %w", len(row.Options), contract.BinaryPromptVersion, d.bslotsErr)
	}
	r := &request{seq: seq, row: row, start: time.Now(), method: method}
	if method == debias.PriDe {
		if _, ok := d.prior.Load().For(len(row.Options)); !ok && len(row.Options) > 1 {
			return nil, fmt.Errorf("%w: %d options (estimate one first: EstimatePrior, or a prior file)", debias.ErrNoPrior, len(row.Options))
		}
	}
	if method == debias.Cyclic || (method == debias.PriDe && permute > 1) {
		r.shifts = debias.Shifts(len(row.Options), permute)
	}
	rows := []contract.Row{row}
	for _, s := range r.shifts[min(1, len(r.shifts)):] {
		p := row
		p.Options = debias.Permute(row.Options, s)
		rows = append(rows, p)
	}
	if reverse && r.shifts == nil && len(row.Options) > 1 && d.opts.Contract.lettered() && !d.binaryRow(len(row.Options)) {
		r.reversed = true
		rows = append(rows, reversedRow(row))
		r.levels = d.startLevels(ctx, seq, row) // the rubric's content-free reading, once per question
	}
	for _, rr := range rows {
		j, err := d.newJob(ctx, rr)
		if err != nil {
			if len(r.jobs) > 0 {
				err = fmt.Errorf("permutation %d: %w", len(r.jobs), err)
			}
			return nil, err
		}
		r.jobs = append(r.jobs, j)
	}
	if method == debias.Contextual {
		for _, o := range row.Options {
			if _, ok := d.contentFree.Load(contentFreeKey(row.Question, o)); !ok {
				r.cfOpts = append(r.cfOpts, o)
			}
		}
		if len(r.cfOpts) > 0 {
			for _, ev := range debias.ContentFreeEvidence {
				j, err := d.newJob(ctx, contract.Row{ID: row.ID, State: ev, Question: row.Question, Options: r.cfOpts})
				if err != nil {
					return nil, fmt.Errorf("content-free evidence %q: %w", ev, err)
				}
				r.cf = append(r.cf, j)
			}
		}
	}
	if detect {
		j, err := d.newDetectJob(ctx, row)
		if err != nil {
			return nil, err
		}
		r.detect = j
	}
	return r, nil
}

// suspect waits for a request's detector prompt (Options.Detect) and records its readout in
// res.Suspect, before the result is finished (finish applies AbstainOnSuspect's abstention).
func (d *Decider) suspect(ctx context.Context, r *request, res *Result) error {
	if r.detect == nil {
		return nil
	}
	out, err := d.wait(ctx, r.detect)
	if err != nil {
		return fmt.Errorf("injection detector: %w", err)
	}
	s := out.Suspect
	s.Threshold = d.opts.DetectThreshold
	if s.Threshold == 0 {
		s.Threshold = DefaultDetectThreshold
	}
	s.Flagged = s.PYes >= s.Threshold
	s.Abstain = s.Flagged && d.opts.AbstainOnSuspect
	res.Suspect = s
	res.Stats.PromptTokens += s.NPromptTokens
	res.Stats.DecodedTokens += out.Stats.DecodedTokens
	return nil
}

// end waits for a request's jobs, combines their results, adds the detector's readout and
// finishes the result (calibration, abstention).
func (d *Decider) end(ctx context.Context, r *request) (*Result, error) {
	var out *Result
	var err error
	if r.ko != nil {
		out, err = d.endKnockout(ctx, r)
	} else if r.sl != nil {
		out, err = d.endShortlist(ctx, r)
	} else {
		out, err = d.combine(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	if err := d.suspect(ctx, r, out); err != nil {
		return nil, err
	}
	return d.finishAs(out, r.question), nil
}

// combine waits for a request's jobs and combines their results under its bias control.
func (d *Decider) combine(ctx context.Context, r *request) (*Result, error) {
	results := make([]*Result, len(r.jobs))
	for i, j := range r.jobs {
		res, err := d.wait(ctx, j)
		if err != nil {
			if i > 0 {
				err = fmt.Errorf("permutation %d: %w", i, err)
			}
			return nil, err
		}
		results[i] = res
	}
	res := results[0]
	var out *Result
	var err error
	var prior []float64 // PriDe's prior for the row's option count, divided out of each read
	if r.method == debias.PriDe && (r.reversed || r.shifts != nil) {
		prior, _ = d.prior.Load().For(len(r.row.Options))
	}
	switch {
	case r.reversed:
		var levels []float64
		if levels, err = d.contentFreeLevels(ctx, r); err == nil {
			out, err = d.combineReversed(r, results, r.method, prior, levels)
		}
	case r.method == debias.None:
		out = res
	case r.shifts != nil:
		out, err = d.combineShifts(r, results, r.method, prior)
	case r.method == debias.PriDe:
		out, err = d.applyPrior(r, res)
	case r.method == debias.Contextual:
		if err = d.contentFreeResults(ctx, r); err == nil {
			out, err = d.contextual(r, res)
		}
	default:
		return nil, fmt.Errorf("%w: unknown debias method %q", ErrOptions, r.method)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// appendTokens appends the tokens of the request's prepared prompts (knockout groups
// included) to all.
func (r *request) appendTokens(all [][]int32) [][]int32 {
	all = r.detect.appendTokens(all)
	for _, j := range append(r.jobs, r.cf...) {
		all = j.appendTokens(all)
	}
	if r.ko != nil {
		for _, g := range r.ko.groups {
			all = g.appendTokens(all)
		}
	}
	return all
}
