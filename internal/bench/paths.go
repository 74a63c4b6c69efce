package bench

import (
	"context"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/engine"
)

// Binary runs the binary contract row by row through one backend, one candidate prompt at a
// time, as the seed does per candidate: render, tokenize the prompt and its yes/no boundary
// probes, read the yes/no log-probabilities, rank by p_yes.
func Binary(ctx context.Context, name string, b backend.Backend, rows []contract.Row) (*Path, error) {
	tok := backend.Tokenizer(ctx, b)
	slots, err := contract.ResolveBinarySlots(tok)
	if err != nil {
		return nil, err
	}
	ids := append(append([]int32(nil), slots.Yes...), slots.No...)
	p := &Path{Name: name, SHA: make([][]string, len(rows)), Chosen: make([]string, len(rows))}
	lat := make([]time.Duration, 0, len(rows))
	start := time.Now()
rows:
	for i, row := range rows {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t0 := time.Now()
		evidence, err := contract.EvidenceJSON(row.State)
		if err != nil {
			p.Errors++
			continue
		}
		cands := make([]contract.CandidateScore, len(row.Options))
		shas := make([]string, len(row.Options))
		n := 0
		for k, opt := range row.Options {
			text, err := b.Render(ctx, contract.BinaryMessages(evidence, row.Question, opt))
			if err == nil {
				var toks []int32
				if toks, err = contract.VerifyBinaryBoundary(tok, text, slots); err == nil {
					var r backend.Readout
					t1 := time.Now()
					r, err = b.NextToken(ctx, toks, ids)
					p.DecodeS += time.Since(t1).Seconds()
					if err == nil {
						cands[k] = contract.CandidateScore{ID: opt.ID, PromptSHA256: contract.PromptSHA256(text), NPromptTokens: len(toks),
							BinaryScore: contract.BinaryScore{PYes: contract.PYes(r.Logprobs[:len(slots.Yes)], r.Logprobs[len(slots.Yes):])}}
						shas[k] = contract.PromptSHA256(text)
						n += len(toks)
						continue
					}
				}
			}
			p.Errors++
			continue rows
		}
		chosen := contract.RankCandidates(cands)
		lat = append(lat, time.Since(t0))
		p.PrepareS += time.Since(t0).Seconds()
		p.SHA[i], p.Chosen[i] = shas, cands[chosen].ID
		p.PromptTokens += int64(n)
	}
	p.PrepareS -= p.DecodeS
	finish(p, len(rows), time.Since(start), lat)
	return p, nil
}

// Engine decides all rows at once through the engine (DecideAll: every row submitted, results
// in order). Its PromptTokens are what a no-reuse run would decode; TokensDecoded what the
// engine decoded.
func Engine(ctx context.Context, e *engine.Engine, rows []contract.Row) (*Path, error) {
	p := &Path{Name: "engine", SHA: make([][]string, len(rows)), Chosen: make([]string, len(rows))}
	before := e.Stats()
	start := time.Now()
	outs, err := e.DecideAll(ctx, rows)
	wall := time.Since(start)
	if err != nil {
		return nil, err
	}
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
		for _, c := range r.Candidates {
			p.SHA[i] = append(p.SHA[i], c.PromptSHA256)
		}
	}
	after := e.Stats()
	p.PromptTokens = after.PromptTokens - before.PromptTokens
	p.TokensDecoded = after.DecodedTokens - before.DecodedTokens
	p.DecodeS = float64(after.DecodeNS-before.DecodeNS) / 1e9
	p.PrepareS = float64(after.PrepareNS-before.PrepareNS) / 1e9
	finish(p, len(rows), wall, lat)
	return p, nil
}
