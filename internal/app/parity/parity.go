// Package parity measures whether gojev decides as llama.cpp's HTTP server does: rendered
// prompts (Go renderer, llama.cpp renderer, /apply-template), token ids (in-process vs
// /tokenize), option log-probabilities and chosen options (in-process vs /completion), and the
// chat-template corpus (Go, llama.cpp and Python Jinja2). jev parity prints its Report.
package parity

import (
	"fmt"
	"io"
	"math"
	"time"
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

// Corpus compares the three renderers on a folder of chat templates (llama.cpp's
// models/templates/*.jinja) with the decision messages of a sample row, the clock pinned at
// CorpusNow, bos_token "<s>", eos_token "</s>" and {"enable_thinking": false}.
type Corpus struct {
	Templates int `json:"templates"`
	// PythonRendered counts templates Python Jinja2 renders (the others raise by design).
	PythonRendered int `json:"python_rendered"`
	// GoVsPython and LlamaVsPython count byte-identical renders among PythonRendered.
	GoVsPython    int `json:"go_vs_python"`
	LlamaVsPython int `json:"llama_vs_python"`
	// GoVsLlama counts byte-identical renders among templates both engines render.
	GoVsLlama   int          `json:"go_vs_llama"`
	BothRender  int          `json:"go_and_llama_render"`
	Differences []Difference `json:"differences"`
	// PythonError is set when Python could not run (then the Python counts are zero).
	PythonError string `json:"python_error,omitempty"`
}

// CorpusNow is the clock every corpus render reads.
var CorpusNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// WriteText writes the report as the table jev parity prints, the log-prob checks against
// bound, then every difference.
func (r *Report) WriteText(w io.Writer, bound float64) {
	fmt.Fprintf(w, "parity: %d rows, in-process vs %s, template_date %s\n\n", r.Rows, r.Server, r.TemplateDate)
	fmt.Fprintf(w, "  %-52s %s\n", "check", "result")
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: Go vs llama.cpp renderer", r.PromptsIdentical[GoVsLlama], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: Go vs /apply-template", r.PromptsIdentical[GoVsServer], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "prompts identical: llama.cpp vs /apply-template", r.PromptsIdentical[LlamaVsServer], r.Rows)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "token ids identical (in-process vs /tokenize)", r.TokensIdentical, r.Rows)
	fmt.Fprintf(w, "  %-52s %.3g\n", "max |Δ logprob| (in-process float64 vs /completion)", r.MaxAbsLogprobDiff)
	fmt.Fprintf(w, "  %-52s %.3g (bound %g)\n", "  same logits, server's float32 normaliser", r.MaxAbsLogprobDiffServerArith, bound)
	fmt.Fprintf(w, "  %-52s %.3g (bound %g)\n", "  normaliser-free: |Δ (logprob_i - logprob_A)|", r.MaxAbsLogitGapDiff, bound)
	fmt.Fprintf(w, "  %-52s %d/%d\n", "chosen option identical", r.ChoicesIdentical, r.Rows)
	if c := r.Corpus; c != nil {
		fmt.Fprintf(w, "\n  corpus: %d templates, %d rendered by Python Jinja2\n", c.Templates, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "Go vs Python Jinja2", c.GoVsPython, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "llama.cpp vs Python Jinja2", c.LlamaVsPython, c.PythonRendered)
		fmt.Fprintf(w, "  %-52s %d/%d\n", "Go vs llama.cpp", c.GoVsLlama, c.BothRender)
		if c.PythonError != "" {
			fmt.Fprintf(w, "  python: %s\n", c.PythonError)
		}
	}
	var diffs []Difference
	diffs = append(diffs, r.RowErrors...)
	diffs = append(diffs, r.PromptDifferences...)
	diffs = append(diffs, r.TokenDifferences...)
	diffs = append(diffs, r.ChoiceDifferences...)
	diffs = append(diffs, r.LogprobDifferences...)
	if r.Corpus != nil {
		diffs = append(diffs, r.Corpus.Differences...)
	}
	if len(diffs) > 0 {
		fmt.Fprintf(w, "\ndifferences:\n")
		for _, d := range diffs {
			fmt.Fprintf(w, "  %s %s: %s\n", d.ID, d.What, d.Detail)
		}
	}
}
