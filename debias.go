package gojev

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// Debiased is what bias control adds to a Result. The raw fields of the Result (each option's
// logit, logprob and probability from the row's own order) stay as they are; Chosen, Correct
// and Probability then follow the debiased scores, and RawChosen/RawCorrect keep the raw
// choice.
type Debiased struct {
	// Method is debias.PriDe, debias.Cyclic or debias.Contextual.
	Method debias.Method `json:"method"`
	// RawChosen is the option the raw scores choose; RawCorrect compares it with the label.
	RawChosen  string `json:"raw_chosen"`
	RawCorrect *bool  `json:"raw_correct,omitempty"`
	// Scores are the debiased log-probabilities over the options, in row order (direct only);
	// Probabilities their softmax (direct), or each candidate's calibrated p_yes (binary).
	Scores        []float64 `json:"scores,omitempty"`
	Probabilities []float64 `json:"probabilities"`
	// Prior is the letter prior PriDe divided out, by letter (A first), as estimated or read
	// from a prior file.
	Prior []float64 `json:"prior,omitempty"`
	// PriorSample marks a PriDe row of the estimation sample: it was decided under all k
	// cyclic permutations, and its scores are their average (as the paper scores its sample).
	PriorSample bool `json:"prior_sample,omitempty"`
	// Permutations are the shifted prompts of a cyclic decision (shift 0, the row's own
	// order, is the Result's own prompt and not repeated here).
	Permutations []Permutation `json:"permutations,omitempty"`
	// ContentFree is contextual calibration's mean p_yes per candidate over the content-free
	// evidence (debias.ContentFreeEvidence), in row order.
	ContentFree []float64 `json:"content_free_p_yes,omitempty"`
}

// Permutation is one cyclically shifted prompt of a row: position i (letter Letters[i]) showed
// the row's option (i+Shift) mod k.
type Permutation struct {
	Shift         int    `json:"shift"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	// Logprobs are the log-probabilities over the listed options by position (letter), as
	// this prompt gave them.
	Logprobs []float64 `json:"logprobs"`
}

// SetPrior sets the prior PriDe divides out (the Options.Prior of a running Decider), d.g. after
// EstimatePrior. Safe for concurrent use; rows already decided keep the prior they used.
func (d *Decider) SetPrior(p *debias.Prior) { d.prior.Store(p) }

// Prior returns the PriDe prior in force (nil when none).
func (d *Decider) Prior() *debias.Prior { return d.prior.Load() }

// request is one row in flight: its jobs and how their results combine.
type request struct {
	seq    uint64 // the order it was asked in (Decider.next): the scheduler serves lower first
	row    contract.Row
	start  time.Time
	method debias.Method
	jobs   []*job // direct: one, or one per shift (jobs[j] is shift shifts[j]); binary: one
	shifts []int  // the cyclic shifts decided (nil: the row's own order only)
	// Contextual: content-free jobs (one per evidence in debias.ContentFreeEvidence) for the
	// candidates whose content-free p_yes is not cached yet (cfOpts), in that order.
	cf     []*job
	cfOpts []contract.Option
	// detect is the injection detector's job (Options.Detect), nil without it.
	detect *job
	// ko is the knockout of a row with more than contract.MaxOptions options (its group
	// passes in flight); jobs is then empty.
	ko *knockoutRequest
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
	seq := d.next.Add(1)
	if len(row.Options) > contract.MaxOptions && d.opts.Contract.lettered() {
		return d.beginKnockout(ctx, seq, row, method, permute)
	}
	return d.beginRow(ctx, seq, row, method, permute, d.opts.Detect)
}

// beginRow is begin for a valid row of at most contract.MaxOptions options under a lettered
// contract (any count under Binary), with or without the detector's prompt; seq is the
// request's place in the scheduler's order (a knockout's passes share their row's).
func (d *Decider) beginRow(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int, detect bool) (*request, error) {
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
		j, err := d.newJobOf(ctx, row, true)
		if err != nil {
			return nil, err
		}
		r.detect = j
	}
	for _, j := range append(r.jobs, r.cf...) {
		if err := d.enqueue(ctx, seq, j); err != nil {
			return nil, err
		}
	}
	if r.detect != nil {
		if err := d.enqueue(ctx, seq, r.detect); err != nil {
			return nil, err
		}
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
	} else {
		out, err = d.combine(ctx, r)
	}
	if err != nil {
		return nil, err
	}
	if err := d.suspect(ctx, r, out); err != nil {
		return nil, err
	}
	return d.finish(out), nil
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
	switch {
	case r.method == debias.None:
		out = res
	case r.shifts != nil:
		var prior []float64
		if r.method == debias.PriDe {
			prior, _ = d.prior.Load().For(len(r.row.Options))
		}
		out, err = d.combineShifts(r, results, r.method, prior)
	case r.method == debias.PriDe:
		out, err = d.applyPrior(r, res)
	case r.method == debias.Contextual:
		if err = d.contentFreeResults(ctx, r); err == nil {
			out, err = d.calibrate(r, res)
		}
	default:
		return nil, fmt.Errorf("%w: unknown debias method %q", ErrOptions, r.method)
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// contentFreeResults waits for a contextual request's content-free prompts and caches each
// candidate's content-free p_yes.
func (d *Decider) contentFreeResults(ctx context.Context, r *request) error {
	cf := make([][]float64, len(r.cf))
	for i, j := range r.cf {
		out, err := d.wait(ctx, j)
		if err != nil {
			return fmt.Errorf("content-free evidence %q: %w", debias.ContentFreeEvidence[i], err)
		}
		for _, c := range out.Candidates {
			cf[i] = append(cf[i], c.PYes)
		}
	}
	for o, opt := range r.cfOpts {
		vals := make([]float64, len(cf))
		for i := range cf {
			vals[i] = cf[i][o]
		}
		d.contentFree.Store(contentFreeKey(r.row.Question, opt), vals)
	}
	return nil
}

// positionLogprobs are a direct result's log-probabilities over the listed options, by
// position.
func positionLogprobs(res *Result) []float64 {
	lp := make([]float64, len(res.Options))
	for i, o := range res.Options {
		lp[i] = o.Logprob
	}
	return debias.LogSoftmax(lp)
}

// finishDebiased sets the chosen option from the debiased scores and keeps the raw choice.
func finishDebiased(r *request, res *Result, d *Debiased) *Result {
	d.RawChosen, d.RawCorrect = res.Chosen, res.Correct
	best := 0
	for i, p := range d.Probabilities {
		if p > d.Probabilities[best] {
			best = i
		}
	}
	out := *res
	out.Debias = d
	out.Chosen = r.row.Options[best].ID
	out.Probability = d.Probabilities[best]
	if out.Options != nil {
		out.ChosenLetter = out.Options[best].Letter
	}
	out.Correct = nil
	if r.row.Label != "" {
		ok := out.Chosen == r.row.Label
		out.Correct = &ok
	}
	out.MS = float64(time.Since(r.start).Microseconds()) / 1000
	return &out
}

// combineShifts averages a row's cyclic permutations r.shifts (debias.AverageShifts), each
// first debiased with prior (debias.ApplyPrior) when one is given.
func (d *Decider) combineShifts(r *request, results []*Result, method debias.Method, prior []float64) (*Result, error) {
	perms := make([][]float64, len(results))
	db := &Debiased{Method: method, Prior: prior}
	for j, res := range results {
		perms[j] = positionLogprobs(res)
		if j > 0 {
			db.Permutations = append(db.Permutations, Permutation{Shift: r.shifts[j], PromptSHA256: res.PromptSHA256,
				NPromptTokens: res.NPromptTokens, Logprobs: perms[j]})
		}
	}
	scored := perms
	if prior != nil {
		scored = make([][]float64, len(perms))
		for j, lp := range perms {
			var err error
			if scored[j], _, err = debias.ApplyPrior(lp, prior); err != nil {
				return nil, err
			}
		}
	}
	var err error
	if db.Scores, db.Probabilities, err = debias.AverageShifts(scored, r.shifts); err != nil {
		return nil, err
	}
	out := finishDebiased(r, results[0], db)
	for _, res := range results[1:] {
		out.Stats.PromptTokens += res.Stats.PromptTokens
		out.Stats.DecodedTokens += res.Stats.DecodedTokens
	}
	return out, nil
}

// applyPrior debiases one decode with the prior for its option count (debias.ApplyPrior).
func (d *Decider) applyPrior(r *request, res *Result) (*Result, error) {
	k := len(res.Options)
	prior, ok := d.prior.Load().For(k)
	if !ok {
		if k != 1 {
			return nil, fmt.Errorf("%w: %d options", debias.ErrNoPrior, k)
		}
		prior = []float64{1}
	}
	db := &Debiased{Method: debias.PriDe, Prior: prior}
	var err error
	if db.Scores, db.Probabilities, err = debias.ApplyPrior(positionLogprobs(res), prior); err != nil {
		return nil, err
	}
	return finishDebiased(r, res, db), nil
}

// calibrate applies contextual calibration to every candidate's p_yes and ranks by it.
func (d *Decider) calibrate(r *request, res *Result) (*Result, error) {
	db := &Debiased{Method: debias.Contextual}
	for _, c := range res.Candidates {
		v, ok := d.contentFree.Load(contentFreeKey(r.row.Question, contract.Option{ID: c.ID, Description: descriptionOf(r.row, c.ID)}))
		if !ok {
			return nil, fmt.Errorf("gojev: no content-free p_yes for candidate %q", c.ID)
		}
		cf := v.([]float64)
		q, _ := debias.Calibrate(c.PYes, cf)
		mean := 0.0
		for _, x := range cf {
			mean += x / float64(len(cf))
		}
		db.ContentFree = append(db.ContentFree, mean)
		db.Probabilities = append(db.Probabilities, q)
	}
	return finishDebiased(r, res, db), nil
}

func descriptionOf(row contract.Row, id string) string {
	for _, o := range row.Options {
		if o.ID == id {
			return o.Description
		}
	}
	return ""
}

func contentFreeKey(question string, o contract.Option) string {
	return question + "\x00" + o.ID + "\x00" + o.Description
}

// EstimatePrior estimates PriDe's letter prior from rows without labels: each row is decided
// under all k cyclic permutations of its options (k decodes, sharing their common prefix),
// its prior is debias.EstimateRowPrior of the k readouts, and the priors of rows with the same
// option count are averaged (debias.AveragePriors). Rows with one option add nothing. It
// returns the prior (PromptVersion set; Model left for the caller to fill) and one Outcome per
// row, in order: the row's decision from its permutations' average (Debias.Method PriDe,
// PriorSample true), as the paper decides its estimation sample. A row that fails is its
// Outcome's error and is left out of the estimate. A row of more than 16 options contributes
// one sub-row of each size its knockout's passes have (KnockoutOptions), decided the same way;
// its Outcome is empty (no Result, no error): decide it once the prior is set. The Decider must
// serve the Direct (or Guarded) contract. It does not set the prior: call SetPrior.
func (d *Decider) EstimatePrior(ctx context.Context, rows []contract.Row) (*debias.Prior, []Outcome, error) {
	if !d.opts.Contract.lettered() {
		return nil, nil, fmt.Errorf("%w: PriDe needs the direct contract (or its guarded variant)", ErrOptions)
	}
	out := make([]Outcome, len(rows))
	var reqs []*request
	var of []int // the input row of each request
	for i, row := range rows {
		if err := ctx.Err(); err != nil {
			return nil, out, fmt.Errorf("gojev: %w", err)
		}
		if err := validate(row); err != nil {
			out[i].Err = err
			continue
		}
		est, err := d.estimationRows(row)
		if err != nil {
			out[i].Err = err
			continue
		}
		for _, er := range est {
			r, err := d.beginRow(ctx, d.next.Add(1), er, debias.Cyclic, 0, d.opts.Detect && len(est) == 1)
			if err != nil {
				out[i].Err = err
				break
			}
			reqs, of = append(reqs, r), append(of, i)
		}
	}
	rowPriors := map[int][][]float64{}
	for ri, r := range reqs {
		i := of[ri]
		if out[i].Err != nil {
			continue
		}
		results := make([]*Result, len(r.jobs))
		for s, j := range r.jobs {
			res, err := d.wait(ctx, j)
			if err != nil {
				out[i].Err = err
				break
			}
			results[s] = res
		}
		if out[i].Err != nil {
			continue
		}
		res, err := d.combineShifts(r, results, debias.PriDe, nil)
		if err != nil {
			out[i].Err = err
			continue
		}
		res.Debias.PriorSample = true
		if err := d.suspect(ctx, r, res); err != nil {
			out[i].Err = err
			continue
		}
		if len(rows[i].Options) <= contract.MaxOptions {
			out[i].Result = res
		}
		k := len(r.row.Options)
		if k < 2 {
			continue
		}
		perms := [][]float64{positionLogprobs(results[0])}
		for _, p := range res.Debias.Permutations {
			perms = append(perms, p.Logprobs)
		}
		prior, err := debias.EstimateRowPrior(perms)
		if err != nil {
			out[i].Err = err
			continue
		}
		rowPriors[k] = append(rowPriors[k], prior)
	}
	if err := ctx.Err(); err != nil {
		return nil, out, fmt.Errorf("gojev: %w", err)
	}
	p := &debias.Prior{Method: debias.PriDe, Reference: debias.Reference, PromptVersion: d.opts.Contract.String(),
		ByOptions: map[int]debias.LetterPrior{}}
	for k, priors := range rowPriors {
		avg, err := debias.AveragePriors(priors)
		if err != nil {
			return nil, out, err
		}
		p.ByOptions[k] = debias.LetterPrior{Letters: debias.Letters(k), Prior: avg, SampleRows: len(priors)}
	}
	if len(p.ByOptions) == 0 {
		return nil, out, errors.New("gojev: no row of the sample could be decided under its permutations")
	}
	for i := range out {
		if out[i].Result != nil {
			if prior, ok := p.For(len(rows[i].Options)); ok {
				out[i].Result.Debias.Prior = prior
			}
			out[i].Result = d.finish(out[i].Result)
		}
	}
	return p, out, nil
}
