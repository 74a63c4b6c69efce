package bench

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
)

// Run decides rows through d and measures it. together decides them all at once (DecideAll:
// every row submitted, the scheduler shares their prefixes); otherwise one row at a time, each
// Decide returning before the next starts, as the seed decides. PromptTokens are what a
// no-reuse run would decode; TokensDecoded what the runtime decoded; DecodeS the time in the
// runtime's read-out, PrepareS in rendering, checking and tokenizing.
func Run(ctx context.Context, name string, d *gojev.Decider, rows []contract.Row, together bool) (*Path, error) {
	p := &Path{Name: name, SHA: make([][]string, len(rows)), Chosen: make([]string, len(rows)), Logprobs: make([][]float64, len(rows))}
	before := d.Stats()
	start := time.Now()
	var outs []gojev.Outcome
	if together {
		var err error
		if outs, err = d.DecideAll(ctx, rows); err != nil {
			return nil, err
		}
	} else {
		outs = make([]gojev.Outcome, len(rows))
		for i, row := range rows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			outs[i].Result, outs[i].Err = d.Decide(ctx, row)
		}
	}
	wall := time.Since(start)
	lat := make([]time.Duration, 0, len(rows))
	for i, o := range outs {
		if o.Err != nil {
			p.Errors++
			continue
		}
		r := o.Result
		lat = append(lat, time.Duration(r.MS*float64(time.Millisecond)))
		p.Chosen[i] = r.Chosen
		if r.PromptSHA256 != "" {
			p.SHA[i] = []string{r.PromptSHA256}
		}
		p.Logprobs[i] = Logprobs(r)
		p.Decode = r.Decode
		for _, c := range r.Candidates {
			p.SHA[i] = append(p.SHA[i], c.PromptSHA256)
		}
	}
	after := d.Stats()
	p.PromptTokens = after.PromptTokens - before.PromptTokens
	p.TokensDecoded = after.DecodedTokens - before.DecodedTokens
	p.DecodeS = float64(after.DecodeNS-before.DecodeNS) / 1e9
	p.PrepareS = float64(after.PrepareNS-before.PrepareNS) / 1e9
	finish(p, len(rows), wall, lat)
	return p, nil
}

// Logprobs lists the log-probabilities a result read: each option's (direct), or each
// candidate's yes and no tokens' (binary), in order.
func Logprobs(r *gojev.Result) []float64 {
	var out []float64
	for _, o := range r.Options {
		out = append(out, o.Logprob)
	}
	for _, c := range r.Candidates {
		for _, t := range c.Yes {
			out = append(out, t.Logprob)
		}
		for _, t := range c.No {
			out = append(out, t.Logprob)
		}
	}
	return out
}

// Agreement compares two runs over the same rows, result by result: the largest
// |Δ log-probability| over every value Logprobs lists, and how many rows chose the same option.
// Rows with an error (nil) in either run are skipped.
func Agreement(a, b []*gojev.Result) (maxAbsDelta float64, sameChoices int) {
	pa, pb := resultsPath(a), resultsPath(b)
	return agreement(pa, pb)
}

func resultsPath(rs []*gojev.Result) *Path {
	p := &Path{Chosen: make([]string, len(rs)), Logprobs: make([][]float64, len(rs))}
	for i, r := range rs {
		if r != nil {
			p.Chosen[i], p.Logprobs[i] = r.Chosen, Logprobs(r)
		}
	}
	return p
}

// agreement is Agreement over two measured paths (rows without a choice are skipped).
func agreement(a, b *Path) (maxAbsDelta float64, sameChoices int) {
	for i := range min(len(a.Chosen), len(b.Chosen)) {
		if a.Chosen[i] == "" || b.Chosen[i] == "" {
			continue
		}
		if a.Chosen[i] == b.Chosen[i] {
			sameChoices++
		}
		la, lb := a.Logprobs[i], b.Logprobs[i]
		for k := range min(len(la), len(lb)) {
			maxAbsDelta = max(maxAbsDelta, math.Abs(la[k]-lb[k]))
		}
	}
	return maxAbsDelta, sameChoices
}

// Prepare measures the host's share of deciding rows: everything done for a row before
// llama_decode (gojev.Decider.Render: validating, rendering the chat template, the special-text
// and boundary checks, tokenizing), on workers goroutines at once (at least 1), each taking
// the next row. Nothing is decoded: DecisionsPerS is rows prepared a second, PromptTokens the
// tokens they would decode, P50MS and P95MS one row's preparing time.
func Prepare(ctx context.Context, name string, d *gojev.Decider, rows []contract.Row, workers int) (*Path, error) {
	workers = max(1, min(workers, len(rows)))
	p := &Path{Name: name, Workers: workers, SHA: make([][]string, len(rows)), Chosen: make([]string, len(rows)), Logprobs: make([][]float64, len(rows))}
	lat := make([]time.Duration, len(rows))
	errs := make([]error, len(rows))
	tokens := make([]int64, len(rows))
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(rows) || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				ps, err := d.Render(ctx, rows[i])
				lat[i], errs[i] = time.Since(t0), err
				for _, pr := range ps {
					tokens[i] += int64(pr.NTokens)
					p.SHA[i] = append(p.SHA[i], pr.SHA256)
				}
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ok := lat[:0:0]
	for i, err := range errs {
		if err != nil {
			p.Errors++
			continue
		}
		ok = append(ok, lat[i])
		p.PromptTokens += tokens[i]
	}
	p.PrepareS = wall.Seconds()
	finish(p, len(rows), wall, ok)
	return p, nil
}
