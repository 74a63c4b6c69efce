package gojev

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/calibrate"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// SetPrior sets the prior PriDe divides out (the Options.Prior of a running Decider), d.g. after
// EstimatePrior. Safe for concurrent use; rows already decided keep the prior they used.
func (d *Decider) SetPrior(p *debias.Prior) { d.prior.Store(p) }

// Prior returns the PriDe prior in force (nil when none).
func (d *Decider) Prior() *debias.Prior { return d.prior.Load() }

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

// combineReversed combines a row read in its options' order (results[0]) and in reverse
// (results[1]): each option's log-probability in the two reads, each first debiased with prior
// when one is given (PriDe), averaged: the geometric mean of the two distributions. A letter's
// preference moves to the mirror position in the reverse read, so the part of a position bias
// that is not symmetric about the middle cancels (a score's rubric, read lowest first and
// highest first). levels, the rubric's content-free reading (contentFreeLevels; nil: none), is
// divided out of the mean, which takes the symmetric part too; then it is renormalised.
func (d *Decider) combineReversed(r *request, results []*Result, method debias.Method, prior, levels []float64) (*Result, error) {
	own, rev := positionLogprobs(results[0]), positionLogprobs(results[1])
	db := &Debiased{Method: method, Prior: prior, Reading: ReadBothOrders,
		Permutations: []Permutation{{Reversed: true, PromptSHA256: results[1].PromptSHA256, NPromptTokens: results[1].NPromptTokens, Logprobs: rev}}}
	if prior != nil {
		var err error
		if own, _, err = debias.ApplyPrior(own, prior); err != nil {
			return nil, err
		}
		if rev, _, err = debias.ApplyPrior(rev, prior); err != nil {
			return nil, err
		}
	}
	mean := bothOrders(own, rev)
	if levels != nil {
		for i := range mean {
			mean[i] -= levels[i]
		}
		db.ContentFreeLevels = make([]float64, len(levels))
		for i, v := range levels {
			db.ContentFreeLevels[i] = math.Exp(v)
		}
	}
	db.Scores = debias.LogSoftmax(mean)
	db.Probabilities = make([]float64, len(mean))
	for i, v := range db.Scores {
		db.Probabilities[i] = math.Exp(v)
	}
	out := finishDebiased(r, results[0], db)
	out.Stats.PromptTokens += results[1].Stats.PromptTokens
	out.Stats.DecodedTokens += results[1].Stats.DecodedTokens
	return out, nil
}

// bothOrders is the mean of a listed read's log-probabilities by position (own) and a reversed
// read's (rev: position k-1-i showed option i), by option.
func bothOrders(own, rev []float64) []float64 {
	k := len(own)
	mean := make([]float64, k)
	for i := range mean {
		mean[i] = (own[i] + rev[k-1-i]) / 2
	}
	return mean
}

// contentFreeLevels is a score's rubric read without content: with each content-free evidence
// (debias.ContentFreeEvidence: "N/A", "", "[MASK]") as the state, its levels read listed and
// reversed and combined as combineReversed does, the three normalised log distributions
// averaged. This is contextual calibration's estimate of the prompt's own pull toward each
// level (Zhao et al., ICML 2021), here of a rubric's levels: dividing it out takes the part of
// the position bias that reading both orders leaves (a pull toward the middle, or toward both
// ends). It is read once per Decider and question (startLevels) and is the same for every
// state asked; nil when the request reads none.
func (d *Decider) contentFreeLevels(ctx context.Context, r *request) ([]float64, error) {
	if r.levels == nil {
		return nil, nil
	}
	levels, err := r.levels.wait(ctx)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("gojev: row %s: %w", r.row.IDJSON(), err)
	}
	return levels, err
}

// startLevels starts reading row's rubric without content (contentFreeLevels' six prompts:
// each content-free evidence as the state, listed and reversed, queued at seq), once per
// Decider and question (d.levels): the rows asked while the first is decided wait for the same
// six prompts instead of queuing their own. The prompts are not dropped when the request that
// started them is cancelled, since rows asked after it wait for them.
func (d *Decider) startLevels(ctx context.Context, seq uint64, row contract.Row) *flight[[]float64] {
	return d.levels.start(levelsKey(row), func() ([]float64, error) {
		return d.readLevels(context.WithoutCancel(ctx), seq, row)
	})
}

// readLevels queues the six content-free prompts of row's rubric at seq and combines their
// reads (contentFreeLevels).
func (d *Decider) readLevels(ctx context.Context, seq uint64, row contract.Row) ([]float64, error) {
	n := len(debias.ContentFreeEvidence)
	jobs := make([]*job, 0, 2*n)
	for _, ev := range debias.ContentFreeEvidence {
		cf := contract.Row{ID: row.ID, State: ev, Question: row.Question, Options: row.Options}
		for _, rr := range []contract.Row{cf, reversedRow(cf)} {
			j, err := d.newJob(ctx, rr)
			if err == nil {
				err = d.enqueue(ctx, seq, j)
			}
			if err != nil {
				return nil, fmt.Errorf("content-free evidence %q: %w", ev, err)
			}
			jobs = append(jobs, j)
		}
	}
	var levels []float64
	for i := range n {
		own, err := d.wait(ctx, jobs[2*i])
		var rev *Result
		if err == nil {
			rev, err = d.wait(ctx, jobs[2*i+1])
		}
		if err != nil {
			return nil, fmt.Errorf("content-free evidence %q: %w", debias.ContentFreeEvidence[i], err)
		}
		l := debias.LogSoftmax(bothOrders(positionLogprobs(own), positionLogprobs(rev)))
		if levels == nil {
			levels = make([]float64, len(l))
		}
		for j, v := range l {
			levels[j] += v / float64(n)
		}
	}
	return levels, nil
}

// levelsKey is contentFreeLevels' cache key: the row's question and its options in order.
func levelsKey(row contract.Row) string {
	var b strings.Builder
	b.WriteString("levels\x00")
	b.WriteString(row.Question)
	for _, o := range row.Options {
		b.WriteString("\x00" + o.ID + "\x00" + o.Description)
	}
	return b.String()
}

// reversedRow is row with its options in reverse order.
func reversedRow(row contract.Row) contract.Row {
	row.Options = slices.Clone(row.Options)
	slices.Reverse(row.Options)
	return row
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

// priorProgressKey is the context key of WithPriorProgress's function.
type priorProgressKey struct{}

// WithPriorProgress returns a copy of ctx under which Decider.EstimatePrior calls fn each time
// one of its rows is done (decided under all its permutations, or failed), with the prompts
// done so far and the prompts in all, from EstimatePrior's goroutine; fn must return quickly.
// total is fixed before the first call: the prompts of every row that reached decoding (k
// cyclic permutations for a row of k ≤ 16 options; for a larger row, those of its knockout
// sub-rows; none for a row refused before decoding, which is never reported). There is no
// call before the first row is done, and the last call has done == total. It is how a long
// estimation shows progress (k decodes a row: on a CPU, minutes for a few dozen rows), in the
// manner of net/http/httptrace's hooks.
func WithPriorProgress(ctx context.Context, fn func(done, total int)) context.Context {
	return context.WithValue(ctx, priorProgressKey{}, fn)
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
// serve the Direct (or Guarded) contract. It does not set the prior: call SetPrior. Under a
// context from WithPriorProgress it reports each row done.
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
	progress, _ := ctx.Value(priorProgressKey{}).(func(done, total int))
	done, total := 0, 0
	for _, r := range reqs {
		total += len(r.jobs)
	}
	for ri, r := range reqs {
		if i := of[ri]; out[i].Err == nil { // a row whose earlier sub-row failed is done
			res, prior, err := d.estimationRow(ctx, r)
			if res != nil && len(rows[i].Options) <= contract.MaxOptions {
				out[i].Result = res
			}
			if err != nil {
				out[i].Err = err
			} else if prior != nil {
				k := len(r.row.Options)
				rowPriors[k] = append(rowPriors[k], prior)
			}
		}
		if progress != nil {
			done += len(r.jobs)
			progress(done, total)
		}
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

// estimationRow waits for a sample request's permutations and returns the row's decision from
// their average (Debias.PriorSample set) and the row's own prior from them
// (debias.EstimateRowPrior; nil for a row of fewer than two options). The decision is nil
// when the permutations, their combination or the injection check fail; a prior that cannot
// be estimated returns the decision with the error.
func (d *Decider) estimationRow(ctx context.Context, r *request) (*Result, []float64, error) {
	results := make([]*Result, len(r.jobs))
	for s, j := range r.jobs {
		res, err := d.wait(ctx, j)
		if err != nil {
			return nil, nil, err
		}
		results[s] = res
	}
	res, err := d.combineShifts(r, results, debias.PriDe, nil)
	if err != nil {
		return nil, nil, err
	}
	res.Debias.PriorSample = true
	if err := d.suspect(ctx, r, res); err != nil {
		return nil, nil, err
	}
	if len(r.row.Options) < 2 {
		return res, nil, nil
	}
	perms := [][]float64{positionLogprobs(results[0])}
	for _, p := range res.Debias.Permutations {
		perms = append(perms, p.Logprobs)
	}
	prior, err := debias.EstimateRowPrior(perms)
	return res, prior, err
}

// estimationRows are the rows PriDe's estimation decides for a sample row: the row itself, or
// for a knockout row one sub-row of each pass size (the first group of that size; for a final
// pass of another size, that many options taken group by group), since its passes are what
// the prior divides out of.
func (d *Decider) estimationRows(row contract.Row) ([]contract.Row, error) {
	if len(row.Options) <= contract.MaxOptions {
		return []contract.Row{row}, nil
	}
	p, err := d.plan(row)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", contract.ErrRow, err)
	}
	var out []contract.Row
	seen := map[int]bool{}
	var order []int
	for _, g := range p.Groups {
		order = append(order, g...)
		if !seen[len(g)] {
			seen[len(g)] = true
			out = append(out, subRow(row, g))
		}
	}
	if f := len(p.Groups) * p.Keep; !seen[f] {
		idx := slices.Clone(order[:f])
		slices.Sort(idx)
		out = append(out, subRow(row, idx))
	}
	return out, nil
}

// contextual applies contextual calibration (debias.Calibrate) to every candidate's p_yes and
// ranks by it.
func (d *Decider) contextual(r *request, res *Result) (*Result, error) {
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

// wantsStoredPrior reports whether a Decider under these options reads the stored PriDe prior
// when it is given none: PriDe or the default bias control, under a direct contract, with
// neither a Prior nor a calibration profile's.
func (o Options) wantsStoredPrior() bool {
	return (o.Debias == debias.PriDe || o.Debias == debias.Default) && o.Contract.lettered() &&
		(o.Calibration == nil || o.Calibration.Prior == nil)
}

// withStored gives opts what is stored for the model file at path: the stored PriDe prior
// (debias.DefaultStore: kept by earlier runs, or shipped) when it wants one
// (wantsStoredPrior), and under the default bias control without a calibration profile the
// profile gojev ships for the model and rt's chat template (calibrate.ShippedProfile). A store
// that cannot be read is logged and passed over.
func withStored(opts Options, path string, rt backend.Backend) Options {
	wantPrior := opts.Prior == nil && opts.wantsStoredPrior()
	wantProfile := opts.Calibration == nil && opts.Debias == debias.Default && opts.Contract.lettered()
	if !wantPrior && !wantProfile {
		return opts
	}
	id, err := ModelIdentity(path, "")
	if err != nil {
		return opts
	}
	if wantPrior {
		p, err := debias.DefaultStore().Load(id, opts.Contract.String())
		if err != nil {
			slog.Warn("gojev: the stored PriDe prior cannot be read; passing over it", "err", err)
		}
		opts.Prior = p
	}
	if t, ok := rt.(interface{ TemplateSHA256() string }); ok && wantProfile {
		if p := calibrate.ShippedProfile(id.SHA256, t.TemplateSHA256(), opts.Contract.String()); p != nil {
			opts.Calibration = p
		}
	}
	return opts
}
