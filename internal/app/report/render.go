package report

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// RunReport is one run's section of a report.
type RunReport struct {
	Name     string   `json:"name"`
	Variant  string   `json:"variant,omitempty"`
	Path     string   `json:"path"`
	Model    string   `json:"model,omitempty"`
	ModelSHA string   `json:"model_sha256,omitempty"`
	File     string   `json:"model_file,omitempty"`
	Contract string   `json:"prompt_version,omitempty"`
	Method   string   `json:"debias,omitempty"`
	Args     []string `json:"args,omitempty"`
	Jev      string   `json:"jev,omitempty"`
	LlamaCpp string   `json:"llama_cpp,omitempty"`
	NThreads int      `json:"n_threads,omitempty"`
	Metrics
	// Typed counts the file's typed rows; Questions are their figures, per named question
	// (none without typed rows).
	Typed     int               `json:"typed_rows,omitempty"`
	Questions []QuestionMetrics `json:"questions,omitempty"`
	// Paired compares the run with the report's first run (nil for the first).
	Paired *Paired `json:"paired,omitempty"`
}

// Report is a report on one or more runs, side by side.
type Report struct {
	Generated time.Time   `json:"generated"`
	Runs      []RunReport `json:"runs"`
	// Injection is the prompt-injection section (jev redteam); nil in other reports.
	Injection *Injection `json:"injection,omitempty"`
}

// Build computes every run's metrics and pairs each with the first run.
func Build(runs []*Run) *Report {
	rep := &Report{Generated: time.Now().UTC()}
	for i, r := range runs {
		rr := RunReport{Name: r.Name, Variant: r.Variant, Path: r.Path, Metrics: Compute(r), Typed: len(r.Answers), Questions: questionMetrics(r.Answers)}
		if m := r.Meta; m != nil {
			rr.Contract, rr.Args, rr.Jev, rr.LlamaCpp, rr.NThreads = m.PromptVersion, m.Args, m.Jev, m.LlamaCpp, m.NThreads
			rr.Method = string(m.Debias)
			if r.Variant == "raw" {
				rr.Method = ""
			}
			if m.Model != nil {
				rr.Model, rr.File, rr.ModelSHA = m.Model.Name, m.Model.File, m.Model.SHA256
			}
			if r.Variant == "raw" {
				rr.DecisionsPerS = nil // the run's time includes the bias control
			}
		}
		if i > 0 {
			p := ComparePaired(runs[0], r)
			rr.Paired = &p
		}
		rep.Runs = append(rep.Runs, rr)
	}
	return rep
}

// WriteJSON writes the report as indented JSON.
func (rep *Report) WriteJSON(w io.Writer) error { return writeJSON(w, rep) }

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// WriteText writes the comparison table a person reads in a terminal.
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%-28s %6s %20s %8s %6s %6s %10s %8s %8s %8s\n", "run", "rows", "accuracy (95% CI)", "macro-F1", "ECE", "Brier", "top letter", "p50 s", "p95 s", "dec/s")
	for _, r := range rep.Runs {
		if len(r.Questions) > 0 && r.Labelled == 0 && r.Rows == r.Errors+r.Typed {
			fmt.Fprintf(&b, "%-28s %6d  typed rows only: their questions' figures are below\n", truncate(r.Name, 28), r.Rows)
			continue
		}
		acc := "n/a"
		if r.Labelled > 0 {
			acc = fmt.Sprintf("%.1f%% [%.1f, %.1f]", 100*r.Accuracy, 100*r.AccuracyCI.Low, 100*r.AccuracyCI.High)
		}
		top := "n/a"
		if r.TopLetter != "" {
			top = fmt.Sprintf("%s %.0f%%", r.TopLetter, 100*r.TopLetterShare)
		}
		dps := "n/a"
		if r.DecisionsPerS != nil {
			dps = fmt.Sprintf("%.3f", *r.DecisionsPerS)
		}
		fmt.Fprintf(&b, "%-28s %6d %20s %8.3f %6.3f %6.3f %10s %8.1f %8.1f %8s\n", truncate(r.Name, 28), r.Rows, acc, r.MacroF1, r.ECE, r.Brier, top, r.LatencyP50MS/1000, r.LatencyP95MS/1000, dps)
	}
	// Selective decisions: what thresholding the probability buys.
	fmt.Fprintf(&b, "%-28s %7s %12s %12s %13s %22s\n", "run (ranked by probability)", "AURC", "acc@80%cov", "cov@≤5%err", "cov@≤10%err", "abstained: coverage, acc")
	for _, r := range rep.Runs {
		if r.Labelled == 0 {
			continue
		}
		abst := "—"
		if r.Abstained > 0 {
			abst = fmt.Sprintf("%d: %.1f%%, %.1f%%", r.Abstained, 100*r.Coverage, 100*r.DecidedAccuracy)
		}
		fmt.Fprintf(&b, "%-28s %7.4f %11.1f%% %11.1f%% %12.1f%% %22s\n", truncate(r.Name, 28), r.Selective.AURC,
			100*r.Selective.AccuracyAt80, 100*r.Selective.CoverageAt5, 100*r.Selective.CoverageAt10, abst)
	}
	// What a row costs (a raw variant shares its run's decodes, so it is left out).
	fmt.Fprintf(&b, "%-28s %8s %14s %15s %8s\n", "run (cost a row)", "prompts", "prompt tokens", "decoded tokens", "s/row")
	for _, r := range rep.Runs {
		if r.Variant != "" {
			continue
		}
		spr := "n/a"
		if r.DecisionsPerS != nil && *r.DecisionsPerS > 0 {
			spr = fmt.Sprintf("%.2f", 1 / *r.DecisionsPerS)
		}
		fmt.Fprintf(&b, "%-28s %8.2f %14.0f %15.0f %8s\n", truncate(r.Name, 28), r.PromptsPerRow, r.PromptTokensPerRow, r.DecodedTokensPerRow, spr)
	}
	// Where a knockout run's errors come from: its group passes or its final pass.
	header := false
	for _, r := range rep.Runs {
		if r.Knockout == nil || r.Variant != "" {
			continue
		}
		if !header {
			fmt.Fprintf(&b, "%-28s %6s %20s %20s %18s\n", "run (knockout)", "rows", "label won its group", "label reached final", "right when it did")
			header = true
		}
		k := r.Knockout
		fmt.Fprintf(&b, "%-28s %6d %20s %20s %18s\n", truncate(r.Name, 28), k.Rows, share(k.GroupTop, k.Rows), share(k.Reached, k.Rows), share(k.RightInFinal, k.Reached))
	}
	// Where the label ranks, for reports with rows of many options (top-K accuracy).
	if slices.ContainsFunc(rep.Runs, func(r RunReport) bool { return r.Ranks != nil && r.Ranks.MaxOptions > 8 }) {
		fmt.Fprintf(&b, "%-28s %6s", "run (label's rank)", "rows")
		for _, k := range RankKs {
			fmt.Fprintf(&b, " %7s", fmt.Sprintf("top-%d", k))
		}
		fmt.Fprintf(&b, " %9s\n", "mean rank")
		for _, r := range rep.Runs {
			if r.Ranks == nil {
				continue
			}
			fmt.Fprintf(&b, "%-28s %6d", truncate(r.Name, 28), r.Ranks.Rows)
			for _, k := range RankKs {
				cell := "—"
				if v, ok := r.Ranks.TopK[k]; ok {
					cell = fmt.Sprintf("%.1f%%", 100*v)
				}
				fmt.Fprintf(&b, " %7s", cell)
			}
			fmt.Fprintf(&b, " %9.1f\n", r.Ranks.MeanRank)
		}
	}
	// The most frequent confusions of each run (its full confusion matrix and per-label
	// precision, recall and F1 are in --json and --html).
	for _, r := range rep.Runs {
		if r.Variant != "" || r.Labelled == 0 {
			continue
		}
		var cells []string
		for _, c := range topConfusions(r, 5) {
			cells = append(cells, fmt.Sprintf("%s → %s (%d)", c.Gold, c.Chosen, c.Count))
		}
		if len(cells) == 0 {
			cells = []string{"none"}
		}
		worst := ""
		if lowest := lowestF1(r, 3); len(lowest) > 0 {
			worst = "; lowest F1: " + strings.Join(lowest, ", ")
		}
		fmt.Fprintf(&b, "%s: %d labels, most confused (gold → chosen): %s%s\n", r.Name, len(r.Labels), strings.Join(cells, ", "), worst)
	}
	for _, r := range rep.Runs {
		if r.Paired != nil && r.Paired.Rows > 0 {
			fmt.Fprintf(&b, "%s vs %s: %d rows, %d right only here, %d right only there (McNemar exact p = %.3g)\n",
				r.Name, r.Paired.Against, r.Paired.Rows, r.Paired.Gained, r.Paired.Lost, r.Paired.PValue)
		}
	}
	// One line per model and contract, naming the runs that used it.
	var keys []string
	byKey := map[string][]string{}
	for _, r := range rep.Runs {
		if r.Model == "" && r.File == "" {
			continue
		}
		k := fmt.Sprintf("model %s (%s, sha256 %.16s…), %s", r.Model, r.File, r.ModelSHA, r.Contract)
		if byKey[k] == nil {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], r.Name)
	}
	for _, k := range keys {
		fmt.Fprintf(&b, "%s: %s\n", k, strings.Join(byKey[k], ", "))
	}
	writeQuestions(&b, rep.Runs)
	_, err := io.WriteString(w, b.String())
	return err
}

func truncate(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// palette colours the runs (Okabe–Ito, readable by colour-blind readers).
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

func colour(i int) string { return palette[i%len(palette)] }

// svgAccuracy draws each run's accuracy as a bar with its 95 % interval.
func svgAccuracy(runs []RunReport) template.HTML {
	const w, h, left, bottom, top = 640, 260, 48, 70, 16
	n := len(runs)
	bw := float64(w-left-20) / float64(max(n, 1))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="accuracy by run">`, w, h)
	plotH := float64(h - bottom - top)
	y := func(v float64) float64 { return float64(top) + plotH*(1-v) }
	for t := 0; t <= 10; t += 2 {
		v := float64(t) / 10
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" font-size="11" text-anchor="end" dy="4">%d%%</text>`,
			left, w-10, y(v), y(v), left-6, y(v), t*10)
	}
	for i, r := range runs {
		x := float64(left) + bw*float64(i) + bw*0.2
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.1f%%</title></rect>`,
			x, y(r.Accuracy), bw*0.6, plotH*r.Accuracy, colour(i), template.HTMLEscapeString(r.Name), 100*r.Accuracy)
		cx := x + bw*0.3
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333" stroke-width="1.5"/>`, cx, cx, y(r.AccuracyCI.Low), y(r.AccuracyCI.High))
		for _, v := range []float64{r.AccuracyCI.Low, r.AccuracyCI.High} {
			fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#333" stroke-width="1.5"/>`, cx-6, cx+6, y(v), y(v))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" font-weight="bold">%.1f%%</text>`, cx, y(r.AccuracyCI.High)-6, 100*r.Accuracy)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, cx, h-bottom+16, template.HTMLEscapeString(truncate(r.Name, int(bw/6.5))))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// svgLetters draws chosen letters against gold letters for one run.
func svgLetters(r RunReport, c string) template.HTML {
	letters := usedLetters(r)
	if len(letters) == 0 {
		if r.Knockout != nil {
			return template.HTML(`<p class="muted">No row letters: a row of more than 16 options is decided in passes, each with letters of its own (the knockout table above says where the label was lost).</p>`)
		}
		return template.HTML(`<p class="muted">No answer letters (binary contract).</p>`)
	}
	const w, h, left, bottom, top = 320, 200, 34, 36, 10
	maxN := 1
	for _, l := range letters {
		maxN = max(maxN, r.Letters[l], r.GoldLetters[l])
	}
	step, axisMax := niceScale(maxN)
	plotH := float64(h - bottom - top)
	gw := float64(w-left-8) / float64(len(letters))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="chosen and gold letters">`, w, h)
	for v := 0; v <= axisMax; v += step {
		yy := float64(top) + plotH*(1-float64(v)/float64(axisMax))
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" font-size="10" text-anchor="end" dy="3">%d</text>`,
			left, w-8, yy, yy, left-4, yy, v)
	}
	maxN = axisMax
	for i, l := range letters {
		x := float64(left) + gw*float64(i)
		for s, v := range []int{r.Letters[l], r.GoldLetters[l]} {
			fill := c
			if s == 1 {
				fill = "#bbb"
			}
			bh := plotH * float64(v) / float64(maxN)
			what := "chosen"
			if s == 1 {
				what = "gold"
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %d</title></rect>`,
				x+gw*0.1+gw*0.4*float64(s), float64(top)+plotH-bh, gw*0.38, bh, fill, l, what, v)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">%s</text>`, x+gw/2, h-bottom+14, l)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/><text x="%d" y="%d" font-size="11">chosen</text>`, left, h-14, c, left+14, h-5)
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="#bbb"/><text x="%d" y="%d" font-size="11">gold</text>`, left+70, h-14, left+84, h-5)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// niceScale picks an integer tick step (1, 2 or 5 times a power of ten) giving at most five
// intervals up to n, and the axis maximum: the first multiple of the step at or above n.
func niceScale(n int) (step, axisMax int) {
	step = 1
	for {
		for _, m := range []int{1, 2, 5} {
			if s := m * step; (n+s-1)/s <= 5 {
				return s, max(s, (n+s-1)/s*s)
			}
		}
		step *= 10
	}
}

// topConfusions lists the most frequent (gold, chosen) pairs with gold ≠ chosen.
func topConfusions(r RunReport, n int) []Confusion {
	var out []Confusion
	for i := range r.Confusion {
		for j, v := range r.Confusion[i] {
			if i != j && v > 0 {
				out = append(out, Confusion{Gold: r.Labels[i].Label, Chosen: r.Labels[j].Label, Count: v})
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Count > out[b].Count })
	return out[:min(n, len(out))]
}

// lowestF1 names the n labels of lowest F1 among those that are some row's gold label, as
// "label 0.123", lowest first (ties in label order).
func lowestF1(r RunReport, n int) []string {
	var ls []LabelStats
	for _, l := range r.Labels {
		if l.Support > 0 {
			ls = append(ls, l)
		}
	}
	sort.SliceStable(ls, func(a, b int) bool { return ls[a].F1 < ls[b].F1 })
	var out []string
	for _, l := range ls[:min(n, len(ls))] {
		out = append(out, fmt.Sprintf("%s %.3f", l.Label, l.F1))
	}
	return out
}

// Confusion is one off-diagonal cell of the confusion matrix.
type Confusion struct {
	Gold, Chosen string
	Count        int
}

func usedLetters(r RunReport) []string {
	last := -1
	for i, l := range "ABCDEFGHIJKLMNOP" {
		if r.Letters[string(l)] > 0 || r.GoldLetters[string(l)] > 0 {
			last = i
		}
	}
	var out []string
	for i := 0; i <= last; i++ {
		out = append(out, "ABCDEFGHIJKLMNOP"[i:i+1])
	}
	return out
}

// svgReliability draws a reliability diagram: accuracy against mean probability per bin, the
// diagonal for perfect calibration, and bin counts.
func svgReliability(r RunReport, c string) template.HTML {
	const size, pad = 220, 34
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="reliability diagram">`, size+pad+10, size+pad+10)
	x := func(v float64) float64 { return pad + v*size }
	y := func(v float64) float64 { return 10 + (1-v)*size }
	fmt.Fprintf(&b, `<rect x="%d" y="10" width="%d" height="%d" fill="none" stroke="#999"/>`, pad, size, size)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999" stroke-dasharray="4 3"/>`, x(0), y(0), x(1), y(1))
	maxCount := 1
	for _, bin := range r.Reliability {
		maxCount = max(maxCount, bin.Count)
	}
	for _, bin := range r.Reliability {
		if bin.Count == 0 {
			continue
		}
		bw := size / float64(len(r.Reliability))
		// Bar: the bin's accuracy; its opacity grows with the bin's share of the rows.
		op := 0.35 + 0.65*float64(bin.Count)/float64(maxCount)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s" fill-opacity="%.2f"><title>[%.1f, %.1f): %d rows, accuracy %.2f, mean p %.2f</title></rect>`,
			x(bin.Low)+1, y(bin.Accuracy), bw-2, size*bin.Accuracy, c, op, bin.Low, bin.High, bin.Count, bin.Accuracy, bin.Confidence)
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="2.5" fill="#333"/>`, x(bin.Confidence), y(bin.Accuracy))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="9" text-anchor="middle">%d</text>`, x(bin.Low)+bw/2, y(0)-3, bin.Count)
	}
	for _, t := range []float64{0, 0.5, 1} {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">%.1f</text>`, x(t), size+24, t)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" font-size="10" text-anchor="end" dy="3">%.1f</text>`, pad-4, y(t), t)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="10" text-anchor="middle">probability of the choice</text>`, x(0.5), size+40)
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// svgRiskCoverage draws every run's risk–coverage curve in one chart: coverage on x, the error
// rate of the covered rows on y (up to the largest risk drawn, rounded up to 10 %).
func svgRiskCoverage(runs []RunReport) template.HTML {
	const w, h, left, bottom, top, right = 520, 300, 48, 40, 12, 150
	maxRisk := 0.1
	for _, r := range runs {
		for _, c := range r.Selective.Curve {
			if c.Coverage >= 0.05 {
				maxRisk = max(maxRisk, c.Risk)
			}
		}
	}
	maxRisk = math.Ceil(maxRisk*10) / 10
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	x := func(v float64) float64 { return float64(left) + pw*v }
	y := func(v float64) float64 { return float64(top) + ph*(1-min(v, maxRisk)/maxRisk) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="risk against coverage">`, w, h)
	for t := 0.0; t <= maxRisk+1e-9; t += maxRisk / 5 {
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" font-size="10" text-anchor="end" dy="3">%.0f%%</text>`,
			left, x(1), y(t), y(t), left-4, y(t), 100*t)
	}
	for t := 0.0; t <= 1+1e-9; t += 0.2 {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%.0f%%</text>`, x(t), y(0)+14, 100*t)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" font-size="11" text-anchor="middle">coverage (share of rows answered)</text>`, x(0.5), h-6)
	fmt.Fprintf(&b, `<text x="12" y="%.1f" font-size="11" text-anchor="middle" transform="rotate(-90 12 %.1f)">error rate</text>`, y(maxRisk/2), y(maxRisk/2))
	for i, r := range runs {
		if len(r.Selective.Curve) == 0 {
			continue
		}
		var pts strings.Builder
		for _, c := range r.Selective.Curve {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(c.Coverage), y(c.Risk))
		}
		fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.8"><title>%s: AURC %.4f</title></polyline>`,
			strings.TrimSpace(pts.String()), colour(i), template.HTMLEscapeString(r.Name), r.Selective.AURC)
		ly := float64(top) + 14*float64(i) + 6
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="3"/><text x="%.1f" y="%.1f" font-size="11" dy="4">%s</text>`,
			x(1)+10, x(1)+24, ly, ly, colour(i), x(1)+28, ly, template.HTMLEscapeString(truncate(r.Name, 20)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// svgConfusion draws the confusion matrix as a heat map (rows gold, columns chosen).
func svgConfusion(r RunReport) template.HTML {
	n := len(r.Labels)
	if n == 0 {
		return ""
	}
	cell := max(6, min(28, 640/n))
	const left, top = 8, 8
	size := cell * n
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" aria-label="confusion matrix">`, size+left+10, size+top+10)
	maxV := 1
	for i := range r.Confusion {
		for j := range r.Confusion[i] {
			maxV = max(maxV, r.Confusion[i][j])
		}
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#ccc"/>`, left, top, size, size)
	for i := range r.Confusion {
		for j, v := range r.Confusion[i] {
			if v == 0 {
				continue
			}
			fill := "#0072B2"
			if i != j {
				fill = "#D55E00"
			}
			op := 0.15 + 0.85*math.Sqrt(float64(v)/float64(maxV))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s" fill-opacity="%.2f"><title>gold %s, chosen %s: %d</title></rect>`,
				left+j*cell, top+i*cell, cell, cell, fill, op, template.HTMLEscapeString(r.Labels[i].Label), template.HTMLEscapeString(r.Labels[j].Label), v)
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"pct": func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"f3":  func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"f4":  func(v float64) string { return fmt.Sprintf("%.4f", v) },
	"secs": func(ms float64) string {
		if ms >= 10000 {
			return fmt.Sprintf("%.0f s", ms/1000)
		}
		return fmt.Sprintf("%.2f s", ms/1000)
	},
	"colour":       colour,
	"accuracy":     svgAccuracy,
	"letters":      svgLetters,
	"reliability":  svgReliability,
	"riskcoverage": svgRiskCoverage,
	"confusion":    svgConfusion,
	"topconf":      func(r RunReport) []Confusion { return topConfusions(r, 12) },
	"dps": func(v *float64) string {
		if v == nil {
			return "n/a"
		}
		return fmt.Sprintf("%.3f", *v)
	},
	"pval":  func(v float64) string { return fmt.Sprintf("%.3g", v) },
	"moved": svgMoved,
	"share": share,
	"spr": func(v *float64) string {
		if v == nil || *v <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", 1 / *v)
	},
	"knockoutruns": func(runs []RunReport) bool {
		return slices.ContainsFunc(runs, func(r RunReport) bool { return r.Knockout != nil })
	},
	"rankruns": func(runs []RunReport) bool {
		return slices.ContainsFunc(runs, func(r RunReport) bool { return r.Ranks != nil && r.Ranks.MaxOptions > 8 })
	},
	"rankks": func() []int { return RankKs },
	"topk": func(m *RankMetrics, k int) string {
		if v, ok := m.TopK[k]; ok {
			return fmt.Sprintf("%.1f%%", 100*v)
		}
		return "—"
	},
	"join": strings.Join,
	"short": func(s string) string {
		if len(s) > 16 {
			return s[:16] + "…"
		}
		return s
	},
}).Parse(pageTemplate))

// WriteHTML writes the report as one self-contained HTML page (inline CSS and SVG, no
// scripts, nothing fetched).
func (rep *Report) WriteHTML(w io.Writer) error { return page.Execute(w, rep) }

const pageTemplate = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>gojev evaluation report</title>
<style>
body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1400px;color:#222;padding:0 16px}.scroll{overflow-x:auto}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #e3e3e3;padding-bottom:4px}
table{border-collapse:collapse;margin:8px 0}th,td{padding:4px 10px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th{background:#f6f6f6;font-weight:600}td.wrap{white-space:normal;max-width:190px}td.l,th.l{text-align:left}.muted{color:#777}.swatch{display:inline-block;width:10px;height:10px;margin-right:6px;border-radius:2px}
.grid{display:flex;flex-wrap:wrap;gap:18px}.card{border:1px solid #e6e6e6;border-radius:6px;padding:10px 12px}.card h3{font-size:14px;margin:0 0 6px}
details{margin:6px 0}summary{cursor:pointer;color:#0b5394}code{font-size:12px;background:#f4f4f4;padding:1px 4px;border-radius:3px}
</style></head><body>
<h1>gojev evaluation report</h1>
<p class="muted">{{len .Runs}} run(s), generated {{.Generated.Format "2006-01-02 15:04 UTC"}} by <code>jev report</code>.</p>
<h2>Summary</h2>
<div class="scroll"><table><tr><th class="l">run</th><th class="l">model</th><th class="l">bias control</th><th>rows (errors)</th><th>accuracy (95% CI)</th><th>macro-F1</th><th>ECE</th><th>Brier</th><th>AURC</th><th>top letter</th><th>latency p50 / p95</th><th>decisions/s</th><th class="l">vs first run</th></tr>
{{range $i, $r := .Runs}}<tr><td class="l"><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</td><td class="l wrap">{{if $r.Model}}{{$r.Model}}{{else}}<span class="muted">not recorded</span>{{end}}</td><td class="l">{{if $r.Method}}{{$r.Method}}{{else}}none{{end}}</td>
<td>{{$r.Rows}} ({{$r.Errors}})</td><td><b>{{pct $r.Accuracy}}</b> <span class="muted">({{pct $r.AccuracyCI.Low}}–{{pct $r.AccuracyCI.High}})</span></td><td>{{f3 $r.MacroF1}}</td><td>{{f3 $r.ECE}}</td><td>{{f3 $r.Brier}}</td><td>{{f4 $r.Selective.AURC}}</td>
<td>{{if $r.TopLetter}}{{$r.TopLetter}} {{pct $r.TopLetterShare}}{{else}}n/a{{end}}</td><td>{{secs $r.LatencyP50MS}} / {{secs $r.LatencyP95MS}}</td><td>{{dps $r.DecisionsPerS}}</td>
<td class="l">{{with $r.Paired}}+{{.Gained}} / −{{.Lost}} (p={{pval .PValue}}){{else}}—{{end}}</td></tr>
{{end}}</table></div>
<p class="muted">Accuracy over labelled rows, with the Wilson 95% interval. Latency: from a row's request to its result, queueing behind the rows decided at once (--window) included. ECE: expected calibration error of the chosen option's probability, 10 equal-width bins. Brier: mean multi-class Brier score, Σ over the options of (p − y)², 0 best, 2 worst (binary: over the candidates' p_yes normalised to sum to 1). AURC: area under the risk–coverage curve, 0 best (below). A file decided with --calibration gives a run "(uncalibrated)" too: the same choices with the probabilities before the profile. Top letter: the answer letter chosen most often and its share (position bias at a glance). vs first run: labelled rows this run gets right and the first does not (+), the reverse (−), McNemar's exact p. A file decided with bias control gives two runs: its debiased choices and its raw ones "(raw)", from the same decodes.</p>
<h2>What a row costs</h2>
<div class="scroll"><table><tr><th class="l">run</th><th>prompts</th><th>prompt tokens (alone)</th><th>tokens decoded (prefix reuse)</th><th>s/row</th></tr>
{{range $i, $r := .Runs}}{{if not $r.Variant}}<tr><td class="l"><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</td><td>{{printf "%.2f" $r.PromptsPerRow}}</td><td>{{printf "%.0f" $r.PromptTokensPerRow}}</td><td>{{printf "%.0f" $r.DecodedTokensPerRow}}</td><td>{{spr $r.DecisionsPerS}}</td></tr>{{end}}
{{end}}</table></div>
<p class="muted">Means over the decided rows. Prompt tokens: every prompt's tokens as if decoded alone; decoded: what was decoded after reusing the prefix each prompt shares with the one before. A raw or uncalibrated variant shares its run's decodes and is not listed.</p>
{{if knockoutruns .Runs}}<h2>Knockout: where the label was lost</h2>
<div class="scroll"><table><tr><th class="l">run</th><th>rows</th><th>label won its group</th><th>label reached the final pass</th><th>right when it did</th></tr>
{{range $i, $r := .Runs}}{{if and $r.Knockout (not $r.Variant)}}{{with $r.Knockout}}<tr><td class="l"><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</td><td>{{.Rows}}</td><td>{{share .GroupTop .Rows}}</td><td>{{share .Reached .Rows}}</td><td>{{share .RightInFinal .Reached}}</td></tr>{{end}}{{end}}
{{end}}</table></div>
<p class="muted">A row of more than 16 options is decided in group passes of at most 16 options, the best of each group surviving into a final pass. Label won its group: its group's pass chose it; reached: it survived; right when it did: the row chose it, of the rows where it reached the final pass.</p>{{end}}
{{if rankruns .Runs}}<h2>Where the label ranks</h2>
<div class="scroll"><table><tr><th class="l">run</th><th>rows</th>{{range rankks}}<th>top-{{.}}</th>{{end}}<th>mean rank</th></tr>
{{range $i, $r := .Runs}}{{with $r.Ranks}}<tr><td class="l"><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</td><td>{{.Rows}}</td>{{range $k := rankks}}<td>{{topk $r.Ranks $k}}</td>{{end}}<td>{{printf "%.1f" .MeanRank}}</td></tr>{{end}}
{{end}}</table></div>
<p class="muted">The label's rank among the probabilities the run gave every option (1: the run's choice): top-K is the share of labelled rows whose label ranks K or better, how good a shortlist of K the run would make.</p>{{end}}
{{with .Injection}}<h2>Prompt injection ({{.Catalogue}}, {{.Rows}} rows a family)</h2>
<p class="muted">Each labelled row is attacked towards one wrong option (its target) in every family: the evidence ends with the family's text naming it. Moved: the attacked row's choice is the target and the clean row's is not; acted on: moved and not abstained. Clean and attacked: accuracy. Flagged: the injection detector's recall on the family; clean flagged: its false alarms on the clean rows.</p>
{{moved .}}
<div class="scroll"><table><tr><th class="l">setting</th><th class="l">family</th><th>moved</th><th>acted on</th><th>accuracy clean → attacked</th><th>on target clean → attacked</th><th>abstained clean → attacked</th><th>mean p clean → attacked</th><th>mean p of moved rows</th><th>flagged</th><th>clean flagged</th><th>precision</th><th>detector AUC</th></tr>
{{range .Figures}}<tr><td class="l">{{.Setting}}</td><td class="l">{{.Family}}</td><td><b>{{pct .Moved}}</b></td><td>{{pct .MovedAnswered}}</td><td>{{pct .CleanAccuracy}} → {{pct .AttackedAccuracy}}</td><td>{{pct .CleanOnTarget}} → {{pct .AttackedOnTarget}}</td><td>{{pct .CleanAbstained}} → {{pct .AttackedAbstained}}</td><td>{{f3 .CleanMeanProbability}} → {{f3 .AttackedMeanProbability}}</td><td>{{f3 .MovedMeanProbability}}</td><td>{{if .Detected}}{{pct .AttackedFlagged}}{{else}}—{{end}}</td><td>{{if .Detected}}{{pct .CleanFlagged}}{{else}}—{{end}}</td><td>{{if .Detected}}{{pct .Precision}}{{else}}—{{end}}</td><td>{{if .Detected}}{{f3 .DetectorAUC}}{{else}}—{{end}}</td></tr>
{{end}}</table></div>
<h3>Cost of the decoded settings</h3>
<table><tr><th class="l">setting</th><th>s/row</th><th>wall ×</th><th>tokens decoded/row</th><th>tokens ×</th></tr>{{range .Costs}}<tr><td class="l">{{.Setting}}</td><td>{{printf "%.2f" .WallPerRowS}}</td><td>{{printf "%.2f" .WallVsFirst}}×</td><td>{{printf "%.0f" .DecodedPerRow}}</td><td>{{printf "%.2f" .DecodedVsFirst}}×</td></tr>{{end}}</table>
<h3>Families</h3>
{{range .Families}}<p><b>{{.Name}}</b>: {{.Description}}<br><span class="muted">{{join .Sources "; "}}</span></p>{{end}}
{{end}}
{{accuracy .Runs}}
<h2>Chosen letters against gold letters</h2>
<p class="muted">A model without position bias chooses letters as often as they are right (grey).</p>
<div class="grid">{{range $i, $r := .Runs}}<div class="card"><h3><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</h3>{{letters $r (colour $i)}}</div>{{end}}</div>
<h2>Calibration</h2>
<p class="muted">Bars: accuracy of the decisions whose probability fell in each bin (numbers: rows); dots: their mean probability; dashed: perfect calibration.</p>
<div class="grid">{{range $i, $r := .Runs}}<div class="card"><h3><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}} — ECE {{f3 $r.ECE}}</h3>{{reliability $r (colour $i)}}</div>{{end}}</div>
<h2>Selective decisions: risk against coverage</h2>
<p class="muted">Rows ranked by the probability of their choice, most confident first: the error rate (risk) of the most confident rows against their share (coverage). A run whose probabilities rank its mistakes last sits low on the left. AURC: the area under the curve; acc@80%: accuracy of the 80% most confident rows; cov@≤5% and ≤10%: the most rows that can be decided at that error rate.</p>
{{riskcoverage .Runs}}
<div class="scroll"><table><tr><th class="l">run</th><th>AURC</th><th>accuracy at 80% coverage</th><th>coverage at ≤5% error</th><th>coverage at ≤10% error</th><th>abstained</th><th>coverage</th><th>accuracy of the answered rows</th></tr>
{{range $i, $r := .Runs}}<tr><td class="l"><span class="swatch" style="background:{{colour $i}}"></span>{{$r.Name}}</td><td>{{f4 $r.Selective.AURC}}</td><td>{{pct $r.Selective.AccuracyAt80}}</td><td>{{pct $r.Selective.CoverageAt5}}</td><td>{{pct $r.Selective.CoverageAt10}}</td><td>{{$r.Abstained}}</td><td>{{if $r.Abstained}}{{pct $r.Coverage}}{{else}}—{{end}}</td><td>{{if $r.Abstained}}{{pct $r.DecidedAccuracy}}{{else}}—{{end}}</td></tr>
{{end}}</table></div>
<h2>Confusion and per-label figures</h2>
{{range $i, $r := .Runs}}<details{{if eq $i 0}} open{{end}}><summary>{{$r.Name}}: {{len $r.Labels}} labels, macro-F1 {{f3 $r.MacroF1}}</summary>
<div class="grid"><div class="card"><h3>Confusion matrix (rows: gold, columns: chosen, in label order)</h3>{{confusion $r}}</div>
<div class="card"><h3>Most frequent confusions</h3>{{with topconf $r}}<table><tr><th class="l">gold</th><th class="l">chosen</th><th>rows</th></tr>{{range .}}<tr><td class="l">{{.Gold}}</td><td class="l">{{.Chosen}}</td><td>{{.Count}}</td></tr>{{end}}</table>{{else}}<p class="muted">None.</p>{{end}}<p class="muted">Hover a cell of the matrix for its labels.</p></div>
<div class="card"><h3>Per label</h3><table><tr><th class="l">label</th><th>precision</th><th>recall</th><th>F1</th><th>support</th><th>chosen</th></tr>
{{range $r.Labels}}<tr><td class="l">{{.Label}}</td><td>{{f3 .Precision}}</td><td>{{f3 .Recall}}</td><td>{{f3 .F1}}</td><td>{{.Support}}</td><td>{{.Predicted}}</td></tr>{{end}}</table></div></div></details>
{{end}}
<h2>Runs</h2>
<div class="scroll"><table><tr><th class="l">run</th><th class="l">results file</th><th class="l">contract</th><th class="l">model file</th><th class="l">sha256</th><th class="l">jev</th><th class="l">llama.cpp</th><th>threads</th><th class="l">flags</th></tr>
{{range .Runs}}<tr><td class="l">{{.Name}}</td><td class="l"><code>{{.Path}}</code></td><td class="l">{{.Contract}}</td><td class="l">{{.File}}</td><td class="l"><code title="{{.ModelSHA}}">{{short .ModelSHA}}</code></td><td class="l">{{.Jev}}</td><td class="l">{{.LlamaCpp}}</td><td>{{.NThreads}}</td><td class="l"><code>{{join .Args " "}}</code></td></tr>{{end}}</table></div>
</body></html>
`

// share formats n of total as "n (p %)", or "—" for no rows.
func share(n, total int) string {
	if total == 0 {
		return "—"
	}
	return fmt.Sprintf("%d (%.1f%%)", n, 100*float64(n)/float64(total))
}
