package report_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/app/report"
)

// A tiny labelled results file whose figures are worked out by hand: five decisions and an
// error record; every row also carries a raw choice ("a") as --debias pride records it.
func tinyFile(t *testing.T) string {
	t.Helper()
	rec := func(id, label, chosen string, p, ms float64) string {
		return fmt.Sprintf(`{"id":%q,"prompt_version":"direct-options-v1","chosen":%q,"probability":%v,"label":%q,"ms":%v,`+
			`"options":[{"id":"a","letter":"A","logprob":-1.6931471805599454,"probability":0.5},{"id":"b","letter":"B","logprob":-2.2039728043259361,"probability":0.3},{"id":"c","letter":"C","logprob":-2.6094379124341003,"probability":0.2}],`+
			`"debias":{"method":"pride","raw_chosen":"a"}}`, id, chosen, p, label, ms)
	}
	lines := []string{
		rec("r1", "a", "a", 0.9, 100),
		rec("r2", "b", "a", 0.6, 200),
		rec("r3", "c", "c", 0.8, 300),
		rec("r4", "a", "b", 0.55, 400),
		`{"id":"r5","line":5,"error":"bad row: missing \"state\""}`,
		rec("r6", "b", "b", 0.95, 500),
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "pride.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	meta := `{"prompt_version":"direct-options-v1","debias":"pride","model":{"file":"m.gguf","name":"M","sha256":"abc"},"elapsed_s":10,"decided":5,"args":["-i","x"]}`
	require.NoError(t, os.WriteFile(path+".run.json", []byte(meta), 0o644))
	return path
}

// TestSelectiveAndBrierOnAKnownFile checks the risk–coverage figures and the Brier score of
// the tiny file by hand, and a calibrated record's three runs.
func TestSelectiveAndBrierOnAKnownFile(t *testing.T) {
	runs, err := report.Load(tinyFile(t), "")
	require.NoError(t, err)
	m := report.Compute(runs[0])
	// By probability: 0.95 ✓, 0.9 ✓, 0.8 ✓, 0.6 ✗, 0.55 ✗: risks 0, 0, 0, 1/4, 2/5.
	require.Len(t, m.Selective.Curve, 5)
	for i, want := range []float64{0, 0, 0, 0.25, 0.4} {
		assert.InDelta(t, want, m.Selective.Curve[i].Risk, 1e-12)
		assert.InDelta(t, float64(i+1)/5, m.Selective.Curve[i].Coverage, 1e-12)
	}
	assert.InDelta(t, 0.6, m.Selective.Curve[3].Threshold, 1e-12)
	assert.InDelta(t, 0.65/5, m.Selective.AURC, 1e-12)
	assert.InDelta(t, 0.75, m.Selective.AccuracyAt80, 1e-12, "the 4 most confident rows: 3 right")
	assert.InDelta(t, 0.6, m.Selective.CoverageAt5, 1e-12)
	assert.InDelta(t, 0.6, m.Selective.CoverageAt10, 1e-12)
	// The raw run's probabilities (0.5, 0.3, 0.2) against labels a, b, c, a, b:
	// 0.38, 0.78, 0.98, 0.38, 0.78 → mean 0.66.
	assert.InDelta(t, 0.66, report.Compute(runs[1]).Brier, 1e-9)

	cal := `{"id":"c1","line":1,"prompt_version":"direct-options-v1","chosen":"a","probability":0.7,"label":"b",` +
		`"options":[{"id":"a","letter":"A","logprob":-0.6931471805599453,"probability":0.5},{"id":"b","letter":"B","logprob":-0.6931471805599453,"probability":0.5}],` +
		`"calibration":{"scoring":"raw","uncalibrated_probability":0.5,"probabilities":[0.7,0.3]},"abstained":true}`
	path := filepath.Join(t.TempDir(), "cal.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(cal+"\n"), 0o644))
	runs, err = report.Load(path, "")
	require.NoError(t, err)
	require.Len(t, runs, 2, "calibrated and uncalibrated")
	c, u := report.Compute(runs[0]), report.Compute(runs[1])
	assert.Equal(t, "cal (uncalibrated)", runs[1].Name)
	assert.InDelta(t, 0.49+0.49, c.Brier, 1e-12, "(0.7−0)² + (0.3−1)²")
	assert.InDelta(t, 0.5, u.Brier, 1e-12, "(0.5−0)² + (0.5−1)²")
	assert.InDelta(t, 0.7, c.ECE, 1e-12)
	assert.InDelta(t, 0.5, u.ECE, 1e-12)
	assert.Equal(t, 1, c.Abstained)
	assert.Equal(t, 0.0, c.Coverage)
	assert.Equal(t, 0, u.Abstained)
	assert.Equal(t, "raw", runs[0].Decisions[0].Scoring)
	assert.Equal(t, 1, runs[0].Decisions[0].Sample.Label)
}

func TestMetricsOnAKnownFile(t *testing.T) {
	runs, err := report.Load(tinyFile(t), "")
	require.NoError(t, err)
	require.Len(t, runs, 2, "debiased and raw")
	m := report.Compute(runs[0])
	assert.Equal(t, 6, m.Rows)
	assert.Equal(t, 1, m.Errors)
	assert.Equal(t, 5, m.Labelled)
	assert.Equal(t, 3, m.Correct)
	assert.InDelta(t, 0.6, m.Accuracy, 1e-12)
	// Wilson 95 % interval of 3/5 (e.g. statsmodels proportion_confint(3, 5, method="wilson")).
	assert.InDelta(t, 0.2307, m.AccuracyCI.Low, 1e-4)
	assert.InDelta(t, 0.8824, m.AccuracyCI.High, 1e-4)
	// a: P 1/2 R 1/2; b: P 1/2 R 1/2; c: P 1 R 1 → macro-F1 (0.5 + 0.5 + 1) / 3.
	assert.InDelta(t, 2.0/3, m.MacroF1, 1e-12)
	require.Len(t, m.Labels, 3)
	assert.Equal(t, report.LabelStats{Label: "a", Precision: 0.5, Recall: 0.5, F1: 0.5, Support: 2, Predicted: 2}, m.Labels[0])
	assert.Equal(t, [][]int{{1, 1, 0}, {1, 1, 0}, {0, 0, 1}}, m.Confusion)
	assert.Equal(t, map[string]int{"A": 2, "B": 2, "C": 1}, m.Letters)
	assert.Equal(t, map[string]int{"A": 2, "B": 2, "C": 1}, m.GoldLetters)
	assert.Equal(t, "A", m.TopLetter, "ties go to the earlier letter")
	assert.InDelta(t, 0.4, m.TopLetterShare, 1e-12)
	// ECE: bins 0.9+0.95 (acc 1), 0.8 (acc 1), 0.6 (acc 0), 0.55 (acc 0):
	// 2/5·|1−0.925| + 1/5·|1−0.8| + 1/5·0.6 + 1/5·0.55 = 0.03 + 0.04 + 0.12 + 0.11.
	assert.InDelta(t, 0.30, m.ECE, 1e-12)
	assert.Equal(t, 2, m.Reliability[9].Count)
	assert.InDelta(t, 0.925, m.Reliability[9].Confidence, 1e-12)
	assert.InDelta(t, 300, m.LatencyP50MS, 1e-12)
	assert.InDelta(t, 480, m.LatencyP95MS, 1e-12)
	require.NotNil(t, m.DecisionsPerS)
	assert.InDelta(t, 0.5, *m.DecisionsPerS, 1e-12)

	raw := report.Compute(runs[1])
	assert.Equal(t, 2, raw.Correct, "the raw choice a is right on r1 and r4")
	assert.InDelta(t, 0.5, runs[1].Decisions[0].Probability, 1e-12, "the raw choice's own probability")
	assert.Equal(t, map[string]int{"A": 5}, raw.Letters)
	assert.InDelta(t, 1.0, raw.TopLetterShare, 1e-12)

	p := report.ComparePaired(runs[0], runs[1])
	assert.Equal(t, 5, p.Rows)
	assert.Equal(t, 1, p.Gained, "r4: raw right, debiased wrong")
	assert.Equal(t, 2, p.Lost, "r3 and r6")
	assert.InDelta(t, 1.0, p.PValue, 1e-12)
}

// TestCostFigures: the prompts a row took are counted from its record (shifts, candidates,
// knockout passes and their shifts, the detector), and a run's means and cost line follow.
func TestCostFigures(t *testing.T) {
	lines := []string{
		// cyclic over 3 options (2 shifts beside the row's order) and the detector: 4 prompts
		`{"id":"d","line":1,"prompt_version":"direct-options-v1","chosen":"a","probability":0.5,"options":[{"id":"a","letter":"A","logprob":-0.7,"probability":0.5},{"id":"b","letter":"B","logprob":-0.7,"probability":0.5}],` +
			`"debias":{"method":"cyclic","raw_chosen":"a","permutations":[{"shift":1,"logprobs":[-0.7,-0.7]},{"shift":2,"logprobs":[-0.7,-0.7]}]},"suspect":{"p_yes":0.1},"stats":{"prompt_tokens":400,"decoded_tokens":250}}`,
		// binary over 3 candidates: 3 prompts
		`{"id":"b","line":2,"prompt_version":"binary-candidates-v1","chosen":"x","probability":0.9,"candidates":[{"id":"x","p_yes":0.9},{"id":"y","p_yes":0.1},{"id":"z","p_yes":0.2}],"stats":{"prompt_tokens":300,"decoded_tokens":150}}`,
		// a knockout of two group passes (one under a second shift) and the final pass: 4 prompts
		`{"id":"k","line":3,"prompt_version":"direct-options-v1","chosen":"a","probability":0.6,"knockout":{"grouping":"shuffle","scoring":"raw","passes":[` +
			`{"options":["a","b"],"logprobs":[-0.5,-1],"chosen":"a"},{"options":["c","d"],"logprobs":[-0.5,-1],"chosen":"c","permutations":[{"shift":1,"logprobs":[-0.5,-1]}]},{"final":true,"options":["a","c"],"logprobs":[-0.5,-1],"chosen":"a"}],` +
			`"distribution":[{"id":"a","probability":0.6},{"id":"b","probability":0.1},{"id":"c","probability":0.2},{"id":"d","probability":0.1}]},"stats":{"prompt_tokens":800,"decoded_tokens":500}}`,
	}
	load := func(line string) []*report.Run {
		path := filepath.Join(t.TempDir(), "cost.jsonl")
		require.NoError(t, os.WriteFile(path, []byte(line+"\n"), 0o644))
		require.NoError(t, os.WriteFile(path+".run.json", []byte(`{"prompt_version":"direct-options-v1","elapsed_s":2,"decided":1}`), 0o644))
		runs, err := report.Load(path, "")
		require.NoError(t, err)
		return runs
	}
	var prompts []int
	for _, l := range lines {
		prompts = append(prompts, load(l)[0].Decisions[0].Prompts)
	}
	assert.Equal(t, []int{4, 3, 4}, prompts)
	runs := load(lines[0])
	m := report.Compute(runs[0])
	assert.InDelta(t, 4, m.PromptsPerRow, 1e-12)
	assert.InDelta(t, 400, m.PromptTokensPerRow, 1e-9)
	assert.InDelta(t, 250, m.DecodedTokensPerRow, 1e-9)
	var text bytes.Buffer
	require.NoError(t, report.Build(runs).WriteText(&text))
	assert.Regexp(t, `\ncost +4\.00 +400 +250 +2\.00\n`, text.String(), "prompts, tokens and 2 s for 1 row")
	assert.NotRegexp(t, `\ncost \(raw\) +4`, text.String(), "the raw variant shares the run's decodes")
}

// TestKnockoutPath: where each labelled knockout row's label went, on three hand-made rows of
// two groups (keep 1): row 1's label wins its group and the final; row 2's is its group's
// runner-up and is knocked out; row 3's wins its group and loses the final. Then 2 of 3 won
// their group, 2 reached the final, 1 of those was right; a run file of two invocations gives
// the throughput of both.
func TestKnockoutPath(t *testing.T) {
	// Group 1 (a, b) keeps a, group 2 (c, d) keeps c; the final pass decides a or c.
	row := func(line int, label, chosen, final string) string {
		return fmt.Sprintf(`{"id":"k%d","line":%d,"label":%q,"prompt_version":"direct-options-v1","chosen":%q,"probability":0.5,"knockout":{"grouping":"shuffle","scoring":"raw","passes":[`+
			`{"options":["a","b"],"logprobs":[-0.1,-2],"chosen":"a","survivors":["a"]},{"options":["c","d"],"logprobs":[-0.1,-2],"chosen":"c","survivors":["c"]},{"final":true,"options":["a","c"],"logprobs":%s,"chosen":%q}],`+
			`"distribution":[{"id":"a","probability":0.25},{"id":"b","probability":0.25},{"id":"c","probability":0.25},{"id":"d","probability":0.25}]}}`,
			line, line, label, chosen, final, chosen)
	}
	lines := []string{row(1, "a", "a", `[-0.1,-2]`), row(2, "b", "a", `[-0.1,-2]`), row(3, "a", "c", `[-2,-0.1]`)}
	path := filepath.Join(t.TempDir(), "ko.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	require.NoError(t, os.WriteFile(path+".run.json", []byte(`{"prompt_version":"direct-options-v1","elapsed_s":1,"decided":1,"invocations":2,"decided_all":3,"elapsed_all_s":6}`), 0o644))
	runs, err := report.Load(path, "ko")
	require.NoError(t, err)
	m := report.Compute(runs[0])
	require.NotNil(t, m.Knockout)
	assert.Equal(t, report.KnockoutMetrics{Rows: 3, GroupTop: 2, Reached: 2, ReachedShare: 2.0 / 3, RightInFinal: 1, FinalAccuracy: 0.5}, *m.Knockout)
	require.NotNil(t, m.DecisionsPerS)
	assert.InDelta(t, 0.5, *m.DecisionsPerS, 1e-12, "3 decisions in 6 s over both runs, not this run's 1 in 1 s")
	var text bytes.Buffer
	require.NoError(t, report.Build(runs).WriteText(&text))
	assert.Regexp(t, `\nko +3 +2 \(66\.7%\) +2 \(66\.7%\) +1 \(50\.0%\)\n`, text.String())
	assert.Contains(t, text.String(), "ko: 3 labels, most confused (gold → chosen): a → c (1), b → a (1); lowest F1: b 0.000, a 0.500\n")
	// The page has the same knockout table, and says why the run has no letter chart.
	var html bytes.Buffer
	require.NoError(t, report.Build(runs).WriteHTML(&html))
	assert.Contains(t, html.String(), "Knockout: where the label was lost")
	assert.Contains(t, html.String(), "<td>3</td><td>2 (66.7%)</td><td>2 (66.7%)</td><td>1 (50.0%)</td>")
	assert.Contains(t, html.String(), "No row letters: a row of more than 16 options is decided in passes")
	assert.NotContains(t, html.String(), "binary contract")
}

// TestBinaryBrierIsOverNormalisedPYes: a binary row's Brier score is taken over its p_yes
// normalised to sum to 1, so that it compares with a direct row's. p_yes 0.9, 0.1, 0.2 with
// the label first: 0.75, 1/12, 1/6 → (0.25)² + (1/12)² + (1/6)² = 0.097222…; the p_yes as they
// are would give 0.06.
func TestBinaryBrierIsOverNormalisedPYes(t *testing.T) {
	line := `{"id":"b","line":1,"prompt_version":"binary-candidates-v1","chosen":"x","probability":0.9,"label":"x","candidates":[{"id":"x","p_yes":0.9},{"id":"y","p_yes":0.1},{"id":"z","p_yes":0.2}]}`
	path := filepath.Join(t.TempDir(), "binary.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(line+"\n"), 0o644))
	runs, err := report.Load(path, "")
	require.NoError(t, err)
	m := report.Compute(runs[0])
	assert.InDelta(t, 0.0625+1.0/144+1.0/36, m.Brier, 1e-12)
}

func TestPercentileAndWilsonEdges(t *testing.T) {
	assert.Equal(t, 0.0, report.Percentile(nil, 50))
	assert.InDelta(t, 2.5, report.Percentile([]float64{4, 1, 3, 2}, 50), 1e-12)
	w := report.Wilson(0, 10)
	assert.Equal(t, 0.0, w.Low)
	assert.InDelta(t, 0.2775, w.High, 1e-4)
	w = report.Wilson(10, 10)
	assert.InDelta(t, 0.7225, w.Low, 1e-4)
	assert.InDelta(t, 1.0, w.High, 1e-12)
}

func TestReportOutputs(t *testing.T) {
	runs, err := report.Load(tinyFile(t), "PriDe")
	require.NoError(t, err)
	rep := report.Build(runs)
	require.Len(t, rep.Runs, 2)
	assert.Equal(t, "PriDe (raw)", rep.Runs[1].Name)
	assert.Equal(t, "", rep.Runs[1].Method)
	assert.Equal(t, "pride", rep.Runs[0].Method)
	assert.Equal(t, "M", rep.Runs[0].Model)
	assert.Nil(t, rep.Runs[1].DecisionsPerS, "a raw variant's time is the debiased run's")

	var text, js, html bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	assert.Contains(t, text.String(), "60.0% [23.1, 88.2]")
	assert.Contains(t, text.String(), "PriDe: 3 labels, most confused (gold → chosen): a → b (1), b → a (1); lowest F1: a 0.500, b 0.500, c 1.000\n")
	assert.NotContains(t, text.String(), "PriDe (raw): 3 labels", "variants share their run's line")
	require.NoError(t, rep.WriteJSON(&js))
	assert.Contains(t, js.String(), `"macro_f1": 0.6666666666666666`)
	require.NoError(t, rep.WriteHTML(&html))
	for _, want := range []string{"<svg", "reliability diagram", "confusion matrix", "chosen and gold letters", "PriDe (raw)", "60.0%"} {
		assert.Contains(t, html.String(), want)
	}
	assert.NotContains(t, html.String(), "<script", "self-contained, no scripts")
}

func TestNotAResultsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("hello\n"), 0o644))
	_, err := report.Load(path, "")
	assert.ErrorIs(t, err, report.ErrNotResults)
}

func TestNiceScale(t *testing.T) {
	for _, tc := range []struct{ n, step, max int }{{1, 1, 1}, {3, 1, 3}, {5, 1, 5}, {6, 2, 6}, {11, 5, 15}, {61, 20, 80}, {250, 50, 250}} {
		step, axisMax := report.NiceScaleForTest(tc.n)
		assert.Equal(t, tc.step, step, "n=%d", tc.n)
		assert.Equal(t, tc.max, axisMax, "n=%d", tc.n)
	}
}

// TestLabelRanksOnAKnownFile: binary rows of 12 candidates whose p_yes put the label at ranks
// 1, 4, 6 and 12 (one tie in the label's favour), so top-3 is 1/4, top-5 2/4, top-10 3/4, and
// top-16 is not given (no row has more than 12 options); the text report prints the table.
func TestLabelRanksOnAKnownFile(t *testing.T) {
	row := func(id string, labelRank int, tie bool) string {
		var cands []string
		for i := range 12 {
			p := 0.9 - 0.05*float64(i) // candidate i is the (i+1)-th most probable
			if tie && i == labelRank {
				p = 0.9 - 0.05*float64(labelRank-1)
			}
			cands = append(cands, fmt.Sprintf(`{"id":"c%d","p_yes":%v}`, i, p))
		}
		return fmt.Sprintf(`{"id":%q,"prompt_version":"binary-candidates-v1","chosen":"c0","probability":0.9,"label":"c%d","candidates":[%s]}`,
			id, labelRank-1, strings.Join(cands, ","))
	}
	lines := []string{row("r1", 1, false), row("r2", 4, true), row("r3", 6, false), row("r4", 12, false)}
	path := filepath.Join(t.TempDir(), "binary.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	runs, err := report.Load(path, "")
	require.NoError(t, err)
	m := report.Compute(runs[0])
	require.NotNil(t, m.Ranks)
	assert.Equal(t, 4, m.Ranks.Rows)
	assert.Equal(t, 12, m.Ranks.MaxOptions)
	assert.Equal(t, map[int]float64{3: 0.25, 5: 0.5, 10: 0.75}, m.Ranks.TopK)
	assert.InDelta(t, (1+4+6+12)/4.0, m.Ranks.MeanRank, 1e-12)

	var out bytes.Buffer
	require.NoError(t, report.Build(runs).WriteText(&out))
	assert.Contains(t, out.String(), "binary                            4   25.0%   50.0%   75.0%       —       5.8\n")

	// Three options only (the tiny file's raw run): ranks 1, 2, 3, 1, 2 and no top-K below 3;
	// a report of such runs alone prints no rank table.
	runs, err = report.Load(tinyFile(t), "")
	require.NoError(t, err)
	raw := report.Compute(runs[1])
	require.NotNil(t, raw.Ranks)
	assert.Empty(t, raw.Ranks.TopK)
	assert.InDelta(t, 9/5.0, raw.Ranks.MeanRank, 1e-12)
	out.Reset()
	require.NoError(t, report.Build(runs).WriteText(&out))
	assert.NotContains(t, out.String(), "label's rank")
}
