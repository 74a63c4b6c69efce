// Package parity measures whether gojev decides as llama.cpp's HTTP server does: rendered
// prompts (Go renderer, llama.cpp renderer, /apply-template), token ids (in-process vs
// /tokenize), option log-probabilities and chosen options (in-process vs /completion), and the
// chat-template corpus (Go, llama.cpp and Python Jinja2). jev parity prints its Report.
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

// Pair names used as keys of Report.PromptsIdentical.
const (
	GoVsLlama     = "go_vs_llama"
	GoVsServer    = "go_vs_server"
	LlamaVsServer = "llama_vs_server"
)

// Report is the parity table. Counts are over Rows rows; the lists name every difference.
type Report struct {
	Rows         int    `json:"rows"`
	Server       string `json:"server"`
	TemplateDate string `json:"template_date"`
	// PromptsIdentical counts byte-identical prompts per renderer pair (GoVsLlama, ...).
	PromptsIdentical  map[string]int `json:"prompts_identical"`
	PromptDifferences []Difference   `json:"prompt_differences"`
	// TokensIdentical counts rows whose in-process token ids equal /tokenize's.
	TokensIdentical  int          `json:"tokens_identical"`
	TokenDifferences []Difference `json:"token_differences"`
	// MaxAbsLogprobDiff is max |Δ| over every option of every row between the in-process
	// log-probabilities (logit - logsumexp(logits), in float64) and /completion's.
	MaxAbsLogprobDiff float64 `json:"max_abs_logprob_diff"`
	// MaxAbsLogprobDiffServerArith compares the same in-process logits normalised with the
	// server's float32 arithmetic (get_token_probabilities: expf, a float32 running sum, logf)
	// with /completion's: it isolates decoding from the server's rounding of the normaliser.
	MaxAbsLogprobDiffServerArith float64 `json:"max_abs_logprob_diff_server_arith"`
	// MaxAbsLogitGapDiff compares normaliser-free quantities: max |Δ| of logprob_i - logprob_0
	// (a difference of logits) between the two backends.
	MaxAbsLogitGapDiff float64 `json:"max_abs_logit_gap_diff"`
	// ChoicesIdentical counts rows where both backends choose the same option.
	ChoicesIdentical  int          `json:"choices_identical"`
	ChoiceDifferences []Difference `json:"choice_differences"`
	// LogprobDifferences lists the rows whose normaliser-free difference exceeds Bound.
	LogprobDifferences []Difference `json:"logprob_differences"`
	// Bound is the |Δ| above which a row is listed in LogprobDifferences.
	Bound float64 `json:"bound"`
	// RowErrors lists rows that could not be compared (a bad row, a failed call).
	RowErrors []Difference `json:"row_errors"`
	Corpus    *Corpus      `json:"corpus,omitempty"`
}

// Difference names one row (or template) and what differs.
type Difference struct {
	ID     string `json:"id"`
	What   string `json:"what"`
	Detail string `json:"detail"`
}

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

// ServerLogprobs normalises a logit row as llama-server does for n_probs
// (get_token_probabilities in tools/server/server-common.cpp): p = expf(l - max) / Σ expf,
// the sum a float32 running total over the whole vocabulary, logprob = logf(p). Over ~50k
// tokens the float32 sum drifts: on SmolLM2 its logprobs sit ~1.5e-4 above the exact float64
// value, the same offset for every token of a row.
func ServerLogprobs(logits []float32, ids []int32) []float64 {
	mx := float32(math.Inf(-1))
	for _, l := range logits {
		mx = max(mx, l)
	}
	var sum float32
	for _, l := range logits {
		sum += float32(math.Exp(float64(l - mx)))
	}
	out := make([]float64, len(ids))
	for i, id := range ids {
		p := float32(math.Exp(float64(logits[id]-mx))) / sum
		out[i] = float64(float32(math.Log(float64(p))))
	}
	return out
}

// FirstDifference describes where two texts first differ: the byte offset and ±30 bytes of
// each, quoted.
func FirstDifference(a, b string) string {
	k := 0
	for k < len(a) && k < len(b) && a[k] == b[k] {
		k++
	}
	return fmt.Sprintf("byte %d: %q vs %q", k, a[max(0, k-30):min(len(a), k+30)], b[max(0, k-30):min(len(b), k+30)])
}

// OK reports whether the row checks hold: every prompt identical for every pair, every token
// list identical, every choice identical, no row errors, and the decoding agrees within bound:
// MaxAbsLogprobDiffServerArith and MaxAbsLogitGapDiff ≤ bound. MaxAbsLogprobDiff itself also
// carries the server's float32 normaliser error (see ServerLogprobs) and is reported, not
// bounded.
func (r *Report) OK(bound float64) bool {
	for _, n := range r.PromptsIdentical {
		if n != r.Rows {
			return false
		}
	}
	return r.TokensIdentical == r.Rows && r.ChoicesIdentical == r.Rows && len(r.RowErrors) == 0 &&
		r.MaxAbsLogprobDiffServerArith <= bound && r.MaxAbsLogitGapDiff <= bound
}
