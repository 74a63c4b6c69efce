package gojev

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/knockout"
)

// knockoutRequest is a knockout in flight: its plan and its group passes.
type knockoutRequest struct {
	plan    knockout.Plan
	groups  []*request
	permute int
}

// subRow is the row restricted to the options at the given indices (in that order), its
// label kept when it is among them.
func subRow(row contract.Row, idx []int) contract.Row {
	sub := contract.Row{ID: row.ID, State: row.State, Question: row.Question}
	for _, i := range idx {
		sub.Options = append(sub.Options, row.Options[i])
		if row.Options[i].ID == row.Label {
			sub.Label = row.Label
		}
	}
	return sub
}

// plan plans a row's knockout under the Decider's KnockoutOptions.
func (d *Decider) plan(row contract.Row) (knockout.Plan, error) {
	ids := make([]string, len(row.Options))
	descs := make([]string, len(row.Options))
	for i, o := range row.Options {
		ids[i], descs[i] = o.ID, o.Description
	}
	return knockout.NewPlan(ids, descs, d.opts.Knockout.Grouping, d.opts.Knockout.Seed)
}

// prepareKnockout plans a row of more than contract.MaxOptions options and prepares its group
// passes (and the detector's prompt) for enqueueRequest; endKnockout runs the final pass.
func (d *Decider) prepareKnockout(ctx context.Context, seq uint64, row contract.Row, method debias.Method, permute int) (*request, error) {
	p, err := d.plan(row)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", contract.ErrRow, err)
	}
	r := &request{seq: seq, row: row, start: time.Now(), method: method, ko: &knockoutRequest{plan: p, permute: permute}}
	for g, idx := range p.Groups {
		sub, err := d.prepareRow(ctx, seq, subRow(row, idx), method, permute, false, false)
		if err != nil {
			return nil, fmt.Errorf("knockout group %d of %d: %w", g+1, len(p.Groups), err)
		}
		r.ko.groups = append(r.ko.groups, sub)
	}
	if d.opts.Detect {
		j, err := d.newDetectJob(ctx, row)
		if err != nil {
			return nil, err
		}
		r.detect = j
	}
	return r, nil
}

// passLogprobs are a pass result's log-probabilities over its options, normalised: the
// debiased scores under bias control, else the raw ones.
func passLogprobs(res *Result) []float64 {
	if res.Debias != nil && res.Debias.Scores != nil {
		return debias.LogSoftmax(res.Debias.Scores)
	}
	return positionLogprobs(res)
}

func passOf(res *Result, row contract.Row, lp []float64, survivors []int, final bool) Pass {
	p := Pass{Final: final, PromptSHA256: res.PromptSHA256, NPromptTokens: res.NPromptTokens, Logprobs: lp, Chosen: res.Chosen}
	for _, o := range row.Options {
		p.Options = append(p.Options, o.ID)
	}
	for _, s := range survivors {
		p.Survivors = append(p.Survivors, row.Options[s].ID)
	}
	if res.Debias != nil {
		p.Permutations = res.Debias.Permutations
	}
	return p
}

// endKnockout waits for a knockout's group passes, keeps each group's best, decides the
// survivors in a final pass and combines the passes (knockout.Combine) into the row's result:
// the final pass's seed fields (prompt_sha256, options, chosen), Knockout with every pass and
// the distribution over all options, Probability the chosen option's share of it.
func (d *Decider) endKnockout(ctx context.Context, r *request) (*Result, error) {
	ko := r.ko
	n := len(r.row.Options)
	groupLogp := make([][]float64, len(ko.groups))
	var passes []Pass
	var final []int
	var stats RowStats
	for g, sub := range ko.groups {
		res, err := d.combine(ctx, sub)
		if err != nil {
			return nil, fmt.Errorf("knockout group %d of %d: %w", g+1, len(ko.groups), err)
		}
		groupLogp[g] = passLogprobs(res)
		surv := knockout.Survivors(groupLogp[g], ko.plan.Keep)
		for _, s := range surv {
			final = append(final, ko.plan.Groups[g][s])
		}
		passes = append(passes, passOf(res, sub.row, groupLogp[g], surv, false))
		stats.PromptTokens += res.Stats.PromptTokens
		stats.DecodedTokens += res.Stats.DecodedTokens
	}
	slices.Sort(final)
	finalRow := subRow(r.row, final)
	fr, err := d.beginRow(ctx, r.seq, finalRow, r.method, ko.permute, false)
	if err != nil {
		return nil, fmt.Errorf("knockout final pass: %w", err)
	}
	res, err := d.combine(ctx, fr)
	if err != nil {
		return nil, fmt.Errorf("knockout final pass: %w", err)
	}
	finalLogp := passLogprobs(res)
	passes = append(passes, passOf(res, finalRow, finalLogp, nil, true))
	stats.PromptTokens += res.Stats.PromptTokens
	stats.DecodedTokens += res.Stats.DecodedTokens
	out := *res
	out.ID, out.Label = r.row.IDJSON(), r.row.Label
	out.Debias = nil // each pass's bias control is in its Pass; the row's is the distribution's
	out.Knockout = &Knockout{Grouping: ko.plan.Grouping, Seed: d.opts.Knockout.Seed, Keep: ko.plan.Keep,
		Scoring: d.opts.Scoring(contract.MaxOptions), Passes: passes}
	if d.opts.Debias == debias.Default && res.Debias == nil {
		out.Knockout.Scoring = calibrate.ScoringRaw // no prior was at hand for the final pass
	}
	ids := make([]string, n)
	for i, o := range r.row.Options {
		ids[i] = o.ID
	}
	if err := out.settleKnockout(ids); err != nil {
		return nil, err
	}
	out.Stats.PromptTokens, out.Stats.DecodedTokens = stats.PromptTokens, stats.DecodedTokens
	out.MS = float64(time.Since(r.start).Microseconds()) / 1000
	return &out, nil
}

// settleKnockout sets a knockout result's Distribution (over ids, the row's option ids in row
// order), Chosen, ChosenLetter, Probability and Correct from its recorded passes: the passes'
// log-probabilities combined by knockout.Combine, the choice its argmax (a survivor: the final
// pass's own choice unless the group passes' readings of the survivors overturn it), with its
// letter in the final pass. The seed's other fields stay the final pass's.
func (r *Result) settleKnockout(ids []string) error {
	ko := r.Knockout
	if ko == nil || len(ko.Passes) < 2 || !ko.Passes[len(ko.Passes)-1].Final {
		return errors.New("not a knockout result: no group passes and final pass")
	}
	index := make(map[string]int, len(ids))
	for i, id := range ids {
		index[id] = i
	}
	at := func(p Pass) ([]int, error) {
		if len(p.Logprobs) != len(p.Options) {
			return nil, fmt.Errorf("a pass has %d options and %d log-probabilities", len(p.Options), len(p.Logprobs))
		}
		idx := make([]int, len(p.Options))
		for k, id := range p.Options {
			i, ok := index[id]
			if !ok {
				return nil, fmt.Errorf("a pass lists option %q, which the row does not have", id)
			}
			idx[k] = i
		}
		return idx, nil
	}
	groups := make([][]int, 0, len(ko.Passes)-1)
	groupLogp := make([][]float64, 0, len(ko.Passes)-1)
	for _, p := range ko.Passes[:len(ko.Passes)-1] {
		idx, err := at(p)
		if err != nil {
			return err
		}
		groups, groupLogp = append(groups, idx), append(groupLogp, p.Logprobs)
	}
	fp := ko.Passes[len(ko.Passes)-1]
	final, err := at(fp)
	if err != nil {
		return err
	}
	logp := knockout.Combine(len(ids), groups, groupLogp, final, fp.Logprobs)
	best := 0
	for i, v := range logp {
		if v > logp[best] {
			best = i
		}
	}
	r.Chosen, r.Probability = ids[best], math.Exp(logp[best])
	for _, o := range r.Options {
		if o.ID == r.Chosen {
			r.ChosenLetter = o.Letter
		}
	}
	ko.Distribution = make([]OptionProbability, len(ids))
	for i, id := range ids {
		ko.Distribution[i] = OptionProbability{ID: id, Probability: math.Exp(logp[i])}
	}
	r.Correct = nil
	if r.Label != "" {
		ok := r.Chosen == r.Label
		r.Correct = &ok
	}
	ko.Rule = knockout.RuleLeastSquares
	return nil
}

// RecombineKnockout recomputes a knockout result's distribution and choice (Chosen,
// ChosenLetter, Probability, Correct, Knockout.Distribution) from the passes it records, with
// this build's knockout.Combine: for results written by an earlier gojev, whose rule for the
// choice differed (the final pass's own choice, before the passes were combined by least
// squares). It decodes nothing; the passes, the seed's other fields and any calibration are
// left as they are. An error when r holds no knockout or its passes do not fit its
// distribution's options.
func RecombineKnockout(r *Result) error {
	if r.Knockout == nil {
		return errors.New("not a knockout result")
	}
	ids := make([]string, len(r.Knockout.Distribution))
	for i, o := range r.Knockout.Distribution {
		ids[i] = o.ID
	}
	return r.settleKnockout(ids)
}
