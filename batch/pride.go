package batch

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/jsonl"
)

// priorSample picks PriDe's estimation sample from a rows file, without looking at labels:
// for each option count k ≥ 2, debias.SampleIndices among the valid rows with k options
// (fraction of them, at least minRows, evenly spaced; debias.DefaultSampleFraction and
// DefaultMinSampleRows are PriDe's). It returns the rows with their line numbers, in file
// order, and the number of valid rows with two or more options, and rewinds r. want, when
// set, keeps only the option counts it returns true for.
func priorSample(r io.ReadSeeker, fraction float64, minRows int, want func(k int) bool) (rows []contract.Row, lines []int, total int, err error) {
	byK := map[int][]int{}
	if err := scanRows(r, func(line []byte, lineNo int) {
		if row, err := contract.ParseRow(line); err == nil && len(row.Options) > 1 && (want == nil || want(len(row.Options))) {
			byK[len(row.Options)] = append(byK[len(row.Options)], lineNo)
			total++
		}
	}); err != nil {
		return nil, nil, 0, err
	}
	pick := map[int]bool{}
	for _, ls := range byK {
		for _, i := range debias.SampleIndices(len(ls), fraction, minRows) {
			pick[ls[i]] = true
		}
	}
	if err := scanRows(r, func(line []byte, lineNo int) {
		if pick[lineNo] {
			row, _ := contract.ParseRow(line)
			rows, lines = append(rows, row), append(lines, lineNo)
		}
	}); err != nil {
		return nil, nil, 0, err
	}
	return rows, lines, total, nil
}

// estimate draws PriDe's estimation sample from f (priorSample: Job's fraction and minimum, the
// option counts want keeps, nil for all), estimates the prior for model on it (telling
// PriorEstimating and PriorEstimated), and returns it with the sample rows' decisions by line.
func (j *Job) estimate(ctx context.Context, d *gojev.Decider, f io.ReadSeeker, model debias.ModelID, want func(k int) bool) (*debias.Prior, map[int]gojev.Outcome, error) {
	frac := cmp.Or(j.SampleFraction, debias.DefaultSampleFraction)
	minRows := cmp.Or(j.SampleMinRows, debias.DefaultMinSampleRows)
	rows, lines, total, err := priorSample(f, frac, minRows, want)
	if err != nil {
		return nil, nil, err
	}
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("PriDe: %w", errNoSample)
	}
	ev := PriorEvent{Step: PriorEstimating, SampleRows: len(rows), Rows: total}
	for _, r := range rows {
		ev.Prompts += len(r.Options)
	}
	j.tell(ev)
	start := time.Now()
	if j.OnPriorProgress != nil {
		ctx = gojev.WithPriorProgress(ctx, j.OnPriorProgress)
	}
	prior, byLine, err := estimateOn(ctx, d, rows, lines)
	if err != nil {
		return nil, nil, fmt.Errorf("PriDe: estimating the prior: %w", err)
	}
	prior.Model = model
	j.tell(PriorEvent{Step: PriorEstimated, Prior: prior, Elapsed: time.Since(start)})
	return prior, byLine, nil
}

// estimateOn estimates the prior on sample rows (at the input lines lines) and returns their
// decisions by line.
func estimateOn(ctx context.Context, d *gojev.Decider, rows []contract.Row, lines []int) (*debias.Prior, map[int]gojev.Outcome, error) {
	prior, outs, err := d.EstimatePrior(ctx, rows)
	if err != nil {
		return nil, nil, err
	}
	byLine := make(map[int]gojev.Outcome, len(outs))
	for i, o := range outs {
		byLine[lines[i]] = o
	}
	return prior, byLine, nil
}

// errNoSample: a rows file has no row with two or more options to estimate a prior from.
var errNoSample = fmt.Errorf("batch: no row with two or more options to estimate the prior from")

// scanRows calls fn for every line of r (trimmed, numbered from 1), from its start, then
// rewinds r.
func scanRows(r io.ReadSeeker, fn func(line []byte, lineNo int)) error {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sc := jsonl.NewScanner(r)
	for sc.Scan() {
		fn(bytes.TrimSpace(sc.Line().Bytes), sc.Line().N)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading rows: %w", err)
	}
	_, err := r.Seek(0, io.SeekStart)
	return err
}

// usesDefaultPrior reports whether a run under opts finds PriDe's prior as debias.Default
// does (Job.defaultPrior): the default bias control under a direct contract.
func usesDefaultPrior(opts gojev.Options) bool {
	return opts.Debias == debias.Default && opts.Contract != gojev.Binary
}

// defaultPrior finds the prior a run under debias.Default decides with, option count by
// option count, and sets it: a given prior, PriorFile or the calibration profile's as under
// PriDe (prior); else, for each option count of the input, the prior the store keeps
// (debias.DefaultStore: what earlier runs estimated); else one estimated from the input's
// sample when the sample is at most half of that count's rows (then kept in the store); else
// the prior gojev ships for the model; else none, and those rows get the raw scores
// (PriorEvent.Raw). A shard estimates nothing: it reads the store or decides raw.
func (j *Job) defaultPrior(ctx context.Context, d *gojev.Decider, opts gojev.Options, in io.Reader, model debias.ModelID) (*debias.Prior, map[int]gojev.Outcome, error) {
	if opts.Prior != nil || j.PriorFile != "" || (opts.Calibration != nil && opts.Calibration.Prior != nil) {
		return j.prior(ctx, d, opts, in, model)
	}
	f, ok := in.(io.ReadSeeker) // input spooled it
	if !ok {
		return nil, nil, errors.New("PriDe: the estimation reads the rows twice, and the input cannot be rewound")
	}
	promptVersion := opts.Contract.String()
	store := debias.DefaultStore()
	kept, err := store.Kept(model, promptVersion)
	if err != nil {
		j.tell(PriorEvent{Step: PriorFromFile, Err: err}) // passed over: estimated again, and replaced
		kept = nil
	}
	shipped := debias.Shipped(model.SHA256, promptVersion)
	frac := cmp.Or(j.SampleFraction, debias.DefaultSampleFraction)
	minRows := cmp.Or(j.SampleMinRows, debias.DefaultMinSampleRows)
	counts, err := rowCounts(f)
	if err != nil {
		return nil, nil, err
	}
	out := &debias.Prior{Method: debias.PriDe, Reference: debias.Reference, PromptVersion: promptVersion, Model: model,
		ByOptions: map[int]debias.LetterPrior{}}
	estimate := map[int]bool{}
	var fromStore, fromShipped, raw []int
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		n := counts[k]
		if _, ok := kept.For(k); ok {
			out.ByOptions[k] = kept.ByOptions[k]
			fromStore = append(fromStore, k)
			continue
		}
		if j.Shard.All() && 2*len(debias.SampleIndices(n, frac, minRows)) <= n {
			estimate[k] = true
			continue
		}
		if _, ok := shipped.For(k); ok {
			out.ByOptions[k] = shipped.ByOptions[k]
			fromShipped = append(fromShipped, k)
			continue
		}
		raw = append(raw, k)
	}
	if len(fromStore)+len(fromShipped) > 0 {
		j.tell(PriorEvent{Step: PriorFromFile, Prior: out, Stored: true, File: store.Path(model, promptVersion)})
	}
	var byLine map[int]gojev.Outcome
	if len(estimate) > 0 {
		est, outs, err := j.estimate(ctx, d, f, model, func(k int) bool { return estimate[k] })
		if err != nil {
			return nil, nil, err
		}
		byLine = outs
		for k, lp := range est.ByOptions {
			out.ByOptions[k] = lp
		}
		if err := store.Add(est); err != nil {
			j.tell(PriorEvent{Step: PriorSaved, Stored: true, Err: err})
		} else if p := store.Path(model, promptVersion); p != "" {
			j.tell(PriorEvent{Step: PriorSaved, Prior: est, Stored: true, File: p})
		}
	}
	if len(raw) > 0 {
		j.tell(PriorEvent{Step: PriorNone, Raw: raw})
	}
	if len(out.ByOptions) == 0 {
		d.SetPrior(nil)
		return nil, byLine, nil
	}
	d.SetPrior(out)
	return out, byLine, nil
}

// rowCounts counts the input's valid rows of each option count from 2 to 16 (a knockout's
// passes and binary rows need no prior of their own count), and rewinds r.
func rowCounts(r io.ReadSeeker) (map[int]int, error) {
	counts := map[int]int{}
	err := scanRows(r, func(line []byte, _ int) {
		if row, err := contract.ParseRow(line); err == nil && len(row.Options) > 1 && len(row.Options) <= contract.MaxOptions {
			counts[len(row.Options)]++
		}
	})
	return counts, err
}
