// Package bench runs the same rows through gojev's decision paths and measures them: a
// gojev.Decider deciding all rows together in-process (prefixes shared), one deciding them one
// at a time with every prompt decoded whole (NoPrefixReuse), one over the seed's HTTP path
// against llama-server, and the hardware's prompt-processing rate (llama-bench). Every path
// is the same Decider code on another runtime. jev bench prints and charts its Report.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/gojev/gojev/internal/atomicfile"
)

// Path is one measured decision path.
type Path struct {
	Name string `json:"-"`
	// DecisionsPerS is rows / wall time.
	DecisionsPerS float64 `json:"decisions_per_s"`
	// PromptTokensPerS is the prompt tokens a no-reuse run would decode (the sum of every
	// prompt's length) / wall time: for a path that reuses prefixes, its effective rate.
	PromptTokensPerS float64 `json:"prompt_tokens_per_s"`
	// TokensDecoded is what the path actually decoded, when it knows (the engine).
	TokensDecoded int64   `json:"tokens_decoded,omitempty"`
	PromptTokens  int64   `json:"prompt_tokens"`
	P50MS         float64 `json:"p50_ms"`
	P95MS         float64 `json:"p95_ms"`
	WallS         float64 `json:"wall_s"`
	// DecodeS is the time spent decoding (engine: in llama_decode; sequential: in the
	// backend's next-token read-out; http: in /completion, the server's decode and the HTTP
	// round trip); PrepareS the time spent rendering, tokenizing and checking (http: the
	// /apply-template and /tokenize calls). The rest of WallS is queueing and bookkeeping.
	DecodeS  float64 `json:"decode_s"`
	PrepareS float64 `json:"prepare_s"`
	Errors   int     `json:"errors"`
	// Per row, for the same-prompts/same-choices checks (not in the JSON).
	SHA      [][]string  `json:"-"` // prompt_sha256s of each row (one, or one per candidate)
	Chosen   []string    `json:"-"`
	Logprobs [][]float64 `json:"-"` // each row's Logprobs
	// Workers is how many rows the prepare path prepared at once (its goroutines).
	Workers int `json:"workers,omitempty"`
	// Decode is the results' decode mode ("one-sequence", "packed"; empty over HTTP).
	Decode string `json:"decode,omitempty"`
}

// Ratios compare the paths.
type Ratios struct {
	EngineVsHTTP       float64 `json:"engine_vs_http"`
	EngineVsSequential float64 `json:"engine_vs_sequential"`
	// PrefillEfficiency is the engine's effective prompt tokens/s over the hardware's.
	PrefillEfficiency float64 `json:"prefill_efficiency"`
	// PackedVsEngine is the packed path's decisions/s over the engine's (one-sequence), on
	// the same backend; PackedMaxAbsDeltaLogprob and PackedSameChoices its agreement with the
	// engine's results (Agreement).
	PackedVsEngine           float64 `json:"packed_vs_engine,omitempty"`
	PackedMaxAbsDeltaLogprob float64 `json:"packed_max_abs_delta_logprob,omitempty"`
	PackedSameChoices        int     `json:"packed_same_choices,omitempty"`
	// PrepareVsDecode is the prepare path's rows/s over the fastest decoding path's
	// decisions/s (engine, packed): how far the host's preparing outruns the decoder.
	PrepareVsDecode float64 `json:"prepare_vs_decode,omitempty"`
}

// Report is jev bench's JSON (-o bench.json).
type Report struct {
	Rows                     int              `json:"rows"`
	Threads                  int              `json:"threads"`
	Model                    string           `json:"model"`
	Contract                 string           `json:"contract"`
	Paths                    map[string]*Path `json:"paths"`
	Prepare                  *Path            `json:"prepare,omitempty"`
	Engine                   *Path            `json:"engine,omitempty"`
	Packed                   *Path            `json:"packed,omitempty"`
	Sequential               *Path            `json:"sequential,omitempty"`
	HTTP                     *Path            `json:"http,omitempty"`
	HardwarePromptTokensPerS float64          `json:"hardware_prompt_tokens_per_s"`
	HardwarePromptTokens     int              `json:"hardware_prompt_tokens"`
	Ratios                   Ratios           `json:"ratios"`
	SamePrompts              bool             `json:"same_prompts"`
	SameChoices              bool             `json:"same_choices"`
	Differences              []string         `json:"differences,omitempty"`
	Started                  time.Time        `json:"started"`
}

// latencies turns per-row durations into p50/p95 in milliseconds (nearest rank).
func percentiles(d []time.Duration) (p50, p95 float64) {
	if len(d) == 0 {
		return 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	at := func(q float64) float64 {
		i := int(q*float64(len(s))+0.5) - 1
		i = max(0, min(len(s)-1, i))
		return float64(s[i].Microseconds()) / 1000
	}
	return at(0.50), at(0.95)
}

func finish(p *Path, rows int, wall time.Duration, lat []time.Duration) {
	p.WallS = wall.Seconds()
	p.DecisionsPerS = float64(rows) / wall.Seconds()
	p.PromptTokensPerS = float64(p.PromptTokens) / wall.Seconds()
	p.P50MS, p.P95MS = percentiles(lat)
}

// LlamaBench runs llama.cpp's llama-bench for the prompt-processing rate of nTokens-token
// prompts on the model and threads, flash attention on or off as gojev decodes (-p N -n 0
// -fa 0|1 -r 3 -o json), and returns tokens/s (avg_ts).
func LlamaBench(ctx context.Context, bin, model string, threads, nTokens int, flashAttn bool) (float64, error) {
	fa := "0"
	if flashAttn {
		fa = "1"
	}
	cmd := exec.CommandContext(ctx, bin, "-m", model, "-p", fmt.Sprint(nTokens), "-n", "0", "-t", fmt.Sprint(threads),
		"-fa", fa, "-r", "3", "-o", "json")
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		return 0, fmt.Errorf("bench: %s: %w: %s", bin, err, stderr)
	}
	var res []struct {
		NPrompt int     `json:"n_prompt"`
		AvgTS   float64 `json:"avg_ts"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res) == 0 {
		return 0, fmt.Errorf("bench: unexpected llama-bench output: %v: %.200s", err, out)
	}
	return res[0].AvgTS, nil
}

// Compare fills the ratios and the same-prompts/same-choices checks from the paths present.
func (r *Report) Compare() {
	if r.Engine != nil && r.HTTP != nil && r.HTTP.DecisionsPerS > 0 {
		r.Ratios.EngineVsHTTP = r.Engine.DecisionsPerS / r.HTTP.DecisionsPerS
	}
	if r.Engine != nil && r.Sequential != nil && r.Sequential.DecisionsPerS > 0 {
		r.Ratios.EngineVsSequential = r.Engine.DecisionsPerS / r.Sequential.DecisionsPerS
	}
	if r.Engine != nil && r.HardwarePromptTokensPerS > 0 {
		r.Ratios.PrefillEfficiency = r.Engine.PromptTokensPerS / r.HardwarePromptTokensPerS
	}
	if r.Engine != nil && r.Packed != nil && r.Engine.DecisionsPerS > 0 {
		r.Ratios.PackedVsEngine = r.Packed.DecisionsPerS / r.Engine.DecisionsPerS
		r.Ratios.PackedMaxAbsDeltaLogprob, r.Ratios.PackedSameChoices = agreement(r.Packed, r.Engine)
	}
	if r.Prepare != nil {
		fastest := 0.0
		for _, p := range []*Path{r.Engine, r.Packed} {
			if p != nil {
				fastest = max(fastest, p.DecisionsPerS)
			}
		}
		if fastest > 0 {
			r.Ratios.PrepareVsDecode = r.Prepare.DecisionsPerS / fastest
		}
	}
	ref := r.HTTP
	if ref == nil {
		ref = r.Sequential
	}
	if r.Engine == nil || ref == nil {
		return
	}
	r.SamePrompts, r.SameChoices = true, true
	for i := range r.Engine.SHA {
		if !slices.Equal(r.Engine.SHA[i], ref.SHA[i]) {
			r.SamePrompts = false
			r.Differences = append(r.Differences, fmt.Sprintf("row %d: prompt_sha256 differs (engine vs %s)", i, ref.Name))
		}
		if r.Engine.Chosen[i] != ref.Chosen[i] {
			r.SameChoices = false
			r.Differences = append(r.Differences, fmt.Sprintf("row %d: chose %q (engine) vs %q (%s)", i, r.Engine.Chosen[i], ref.Chosen[i], ref.Name))
		}
	}
}

// Save writes the report as indented JSON to path and its chart (WriteSVG) beside it, the
// .json suffix replaced by .svg; it returns the chart's path ("" when no decoding path ran: the
// prepare path alone has no chart).
func (r *Report) Save(path string) (svg string, err error) {
	if err := saveJSON(path, r); err != nil {
		return "", err
	}
	if r.Engine == nil && r.Packed == nil && r.Sequential == nil && r.HTTP == nil {
		return "", nil
	}
	svg = strings.TrimSuffix(path, ".json") + ".svg"
	return svg, atomicfile.Write(svg, r.WriteSVG)
}

// Save writes the sweep as indented JSON to path.
func (sw *Sweep) Save(path string) error { return saveJSON(path, sw) }

// saveJSON writes v to path as indented JSON, whole or not at all.
func saveJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// WriteText writes the report as the table jev bench prints: each path's rates and latencies,
// where the time goes, and the ratios and agreement checks.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench: %s, %d rows, %d threads, %s\n\n", r.Contract, r.Rows, r.Threads, r.Model)
	fmt.Fprintf(w, "  %-11s %12s %16s %9s %9s %8s\n", "path", "decisions/s", "prompt tokens/s", "p50 ms", "p95 ms", "errors")
	if p := r.Prepare; p != nil {
		fmt.Fprintf(w, "  %-11s %12.1f %16.1f %9.2f %9.2f %8d   (host only: %d rows at once, nothing decoded)\n",
			p.Name, p.DecisionsPerS, p.PromptTokensPerS, p.P50MS, p.P95MS, p.Errors, p.Workers)
	}
	for _, p := range []*Path{r.Engine, r.Packed, r.Sequential, r.HTTP} {
		if p == nil {
			continue
		}
		fmt.Fprintf(w, "  %-11s %12.3f %16.1f %9.0f %9.0f %8d\n", p.Name, p.DecisionsPerS, p.PromptTokensPerS, p.P50MS, p.P95MS, p.Errors)
	}
	if r.HardwarePromptTokensPerS > 0 {
		fmt.Fprintf(w, "  %-11s %12s %16.1f   (llama-bench -p %d)\n", "hardware", "", r.HardwarePromptTokensPerS, r.HardwarePromptTokens)
	}
	decoding := slices.DeleteFunc([]*Path{r.Engine, r.Packed, r.Sequential, r.HTTP}, func(p *Path) bool { return p == nil || p.WallS == 0 })
	if len(decoding) > 0 {
		fmt.Fprintf(w, "\n  where the time goes (s of wall):\n")
	}
	for _, p := range decoding {
		fmt.Fprintf(w, "  %-11s wall %7.1f  decode %7.1f (%3.0f%%)  prepare %6.1f (%3.0f%%)\n", p.Name, p.WallS,
			p.DecodeS, 100*p.DecodeS/p.WallS, p.PrepareS, 100*p.PrepareS/p.WallS)
	}
	if r.Engine != nil && r.Engine.TokensDecoded > 0 {
		fmt.Fprintf(w, "\n  engine decoded %d of %d prompt tokens (%.0f%%)\n", r.Engine.TokensDecoded, r.Engine.PromptTokens,
			100*float64(r.Engine.TokensDecoded)/float64(max(1, r.Engine.PromptTokens)))
	}
	ratio := func(v float64, unit string) string {
		if v == 0 {
			return "n/a"
		}
		if unit == "%" {
			return fmt.Sprintf("%.0f%%", 100*v)
		}
		return fmt.Sprintf("%.2f×", v)
	}
	if r.Ratios.PrepareVsDecode > 0 {
		fmt.Fprintf(w, "\n  prepare/decode %s (the prepare path's rate over the fastest decoding path's)\n", ratio(r.Ratios.PrepareVsDecode, "×"))
	}
	if r.Engine != nil {
		fmt.Fprintf(w, "\n  engine/http %s, engine/sequential %s, prefill efficiency %s\n",
			ratio(r.Ratios.EngineVsHTTP, "×"), ratio(r.Ratios.EngineVsSequential, "×"), ratio(r.Ratios.PrefillEfficiency, "%"))
	}
	if r.Packed != nil && r.Engine != nil {
		fmt.Fprintf(w, "  packed/engine %s; packed vs engine: max |Δ logprob| %.3g, same choices %d/%d\n",
			ratio(r.Ratios.PackedVsEngine, "×"), r.Ratios.PackedMaxAbsDeltaLogprob, r.Ratios.PackedSameChoices, r.Rows)
	}
	if r.Engine != nil && (r.HTTP != nil || r.Sequential != nil) {
		fmt.Fprintf(w, "  same prompts %v, same choices %v\n", r.SamePrompts, r.SameChoices)
	}
	for _, d := range r.Differences {
		fmt.Fprintf(w, "  %s\n", d)
	}
}
