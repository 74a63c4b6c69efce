//go:build cgo

package parity

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

// Rows compares the in-process backend (its Go renderer), llama.cpp's renderer on the same
// model (llm) and the server (srv) on each row. Both backends must render with the same
// chat_template_kwargs. The in-process tokens of the Go-rendered prompt are what both backends
// score, so the log-probability comparison isolates decoding. ctx cancels between rows.
func Rows(ctx context.Context, ip *backend.InProcess, llm *llama.Template, srv *backend.HTTP, rows []contract.Row, kwargs map[string]any) (*Report, error) {
	slots, err := contract.ResolveSlots(backend.Tokenizer(ctx, ip))
	if err != nil {
		return nil, err
	}
	rep := &Report{Server: srv.Name(), TemplateDate: ip.TemplateTime().Format("2006-01-02"), Bound: 1e-4,
		PromptsIdentical: map[string]int{GoVsLlama: 0, GoVsServer: 0, LlamaVsServer: 0}}
	ropts := render.Options{AddGenerationPrompt: true, Kwargs: kwargs, Now: ip.TemplateTime()}
	for _, row := range rows {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		id := string(row.IDJSON())
		fail := func(what string, err error) { rep.RowErrors = append(rep.RowErrors, Difference{id, what, err.Error()}) }
		rep.Rows++
		msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
		if err != nil {
			fail("messages", err)
			continue
		}
		goText, err := ip.Render(ctx, msgs)
		if err != nil {
			fail("go render", err)
			continue
		}
		rm := make([]render.Message, len(msgs))
		for i, m := range msgs {
			rm[i] = render.Message{Role: m.Role, Content: m.Content}
		}
		llText, err := llm.Render(rm, ropts)
		if err != nil {
			fail("llama render", err)
			continue
		}
		srvText, err := srv.Render(ctx, msgs)
		if err != nil {
			fail("server render", err)
			continue
		}
		for _, p := range []struct{ key, a, b string }{{GoVsLlama, goText, llText}, {GoVsServer, goText, srvText}, {LlamaVsServer, llText, srvText}} {
			if p.a == p.b {
				rep.PromptsIdentical[p.key]++
			} else {
				rep.PromptDifferences = append(rep.PromptDifferences, Difference{id, p.key, FirstDifference(p.a, p.b)})
			}
		}
		toks, err := ip.Tokenize(ctx, goText, true)
		if err != nil {
			fail("tokenize", err)
			continue
		}
		srvToks, err := srv.Tokenize(ctx, goText, true)
		if err != nil {
			fail("server tokenize", err)
			continue
		}
		if slices.Equal(toks, srvToks) {
			rep.TokensIdentical++
		} else {
			rep.TokenDifferences = append(rep.TokenDifferences, Difference{id, "tokens", fmt.Sprintf("%d in-process vs %d /tokenize tokens", len(toks), len(srvToks))})
		}
		ids := slots[:len(row.Options)]
		logits, err := ip.Logits(ctx, toks)
		if err != nil {
			fail("decode", err)
			continue
		}
		a, err := backend.ReadoutFromLogits(logits, ids)
		if err != nil {
			fail("decode", err)
			continue
		}
		f32 := ServerLogprobs(logits, ids)
		b, err := srv.NextToken(ctx, toks, ids)
		if err != nil {
			fail("server completion", err)
			continue
		}
		rowGap := 0.0
		for i := range ids {
			rowGap = max(rowGap, math.Abs((a.Logprobs[i]-a.Logprobs[0])-(b.Logprobs[i]-b.Logprobs[0])))
			rep.MaxAbsLogprobDiff = max(rep.MaxAbsLogprobDiff, math.Abs(a.Logprobs[i]-b.Logprobs[i]))
			rep.MaxAbsLogprobDiffServerArith = max(rep.MaxAbsLogprobDiffServerArith, math.Abs(f32[i]-b.Logprobs[i]))
			gapA, gapB := a.Logprobs[i]-a.Logprobs[0], b.Logprobs[i]-b.Logprobs[0]
			rep.MaxAbsLogitGapDiff = max(rep.MaxAbsLogitGapDiff, math.Abs(gapA-gapB))
		}
		if rowGap > rep.Bound {
			rep.LogprobDifferences = append(rep.LogprobDifferences, Difference{id, "logprob",
				fmt.Sprintf("max |Δ (logprob_i - logprob_A)| %.3g over %d options, %d prompt tokens", rowGap, len(ids), len(toks))})
		}
		_, ca := contract.ScoreReadout(a.Logprobs, nil, slots, row.Options)
		_, cb := contract.ScoreReadout(b.Logprobs, nil, slots, row.Options)
		if ca == cb {
			rep.ChoicesIdentical++
		} else {
			rep.ChoiceDifferences = append(rep.ChoiceDifferences, Difference{id, "choice",
				fmt.Sprintf("in-process %s, server %s", row.Options[ca].ID, row.Options[cb].ID)})
		}
	}
	return rep, nil
}
