// Package report turns jev decide's results files into an evaluation report: accuracy with a
// 95 % interval, macro-F1, per-label precision and recall, the confusion matrix, chosen letters
// against gold letters, expected calibration error with its reliability diagram, latency and
// throughput, and the run's model, contract and flags; as JSON, text and a self-contained HTML
// page, for one run or several side by side.
package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/debias"
)

// Decision is one decided row as a run scores it.
type Decision struct {
	Key         string  // id and line: pairs the same row across runs
	Chosen      string  // the option chosen
	Label       string  // the gold option ("" unlabelled)
	Letter      string  // the chosen option's letter in the row's own order
	GoldLetter  string  // the label's letter
	Probability float64 // the probability the run gave its choice
	MS          float64
	// Probs are the probabilities the run gave every option, in row order (direct: a
	// distribution; binary: each candidate's p_yes), for the Brier score.
	Probs []float64
	// Scoring names the scores the choice came from (calibrate.ScoringOf), and Sample holds
	// them uncalibrated with the label's index, for fitting a calibration map (jev calibrate);
	// Sample.Label is -1 for an unlabelled row. Scoring is "" for a PriDe estimation row.
	Scoring string
	Sample  calibrate.Sample
	// Abstained: the record says the row fell below its abstention threshold.
	Abstained bool
	// Prompts is how many prompts the row was decided with (Prompts), PromptTokens their
	// tokens decoded alone and DecodedTokens what the runtime decoded with prefix reuse (the
	// record's stats).
	Prompts       int
	PromptTokens  int
	DecodedTokens float64
	// Knockout says, for a labelled knockout row, where its label went: its rank in its
	// group's pass and whether it survived into the final pass. Nil for other rows.
	Knockout *KnockoutPath
}

// KnockoutPath is where a knockout row's label went (Decision.Knockout).
type KnockoutPath struct {
	GroupRank int  // its rank in its group's pass (0: the group's choice)
	Reached   bool // it survived into the final pass
}

// knockoutPath finds the label's group pass and whether it survived; nil when the label is
// in no group pass.
func knockoutPath(ko *gojev.Knockout, label string) *KnockoutPath {
	for _, p := range ko.Passes {
		if p.Final {
			continue
		}
		i := slices.Index(p.Options, label)
		if i < 0 || i >= len(p.Logprobs) {
			continue
		}
		kp := &KnockoutPath{Reached: slices.Contains(p.Survivors, label)}
		for _, l := range p.Logprobs {
			if l > p.Logprobs[i] {
				kp.GroupRank++
			}
		}
		return kp
	}
	return nil
}

// Prompts counts the prompts a record's row was decided with: a knockout's passes and their
// shifts, a binary row's candidates, a direct row's shifts (one without bias control), and
// the injection detector's prompt.
func Prompts(r *batch.Record) int {
	n := 1
	switch {
	case r.Knockout != nil:
		n = 0
		for _, p := range r.Knockout.Passes {
			n += 1 + len(p.Permutations)
		}
	case r.Candidates != nil:
		n = len(r.Candidates)
	case r.Debias != nil:
		n = 1 + len(r.Debias.Permutations)
	}
	if r.Suspect != nil {
		n++
	}
	return n
}

// Run is one column of a report: the decisions of one results file, raw or debiased.
type Run struct {
	Name    string
	Variant string // "", "uncalibrated" or "raw" (see Load)
	Path    string
	// PromptVersion is the contract the run decided under (its run file's), else that of the
	// file's first decision.
	PromptVersion string
	Meta          *batch.RunFile
	Rows          int
	Errors        int
	Decisions     []Decision
	// Answers are the file's typed rows (questions about a state, as the System One API asks
	// them), reported per question (RunReport.Questions).
	Answers []*batch.AnswersRecord
}

// ErrNotResults: a file is not jev decide output.
var ErrNotResults = errors.New("not a jev decide results file")

// Load reads a results file and its run file (when present) into its runs: the file's own
// choices and probabilities; then, when it was decided with a calibration profile, the same
// choices with their uncalibrated probabilities (name + " (uncalibrated)"); then, when it was
// decided with bias control, the raw choices (name + " (raw)"), all from the same decodes.
func Load(path, name string) ([]*Run, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), ".jsonl")
	}
	main := &Run{Name: name, Path: path}
	uncal := &Run{Name: name + " (uncalibrated)", Variant: "uncalibrated", Path: path}
	raw := &Run{Name: name + " (raw)", Variant: "raw", Path: path}
	all := []*Run{main, uncal, raw}
	if m, err := batch.ReadRunFile(batch.RunFilePath(path)); err == nil {
		for _, r := range all {
			// The run's contract, which a profile fitted on it serves: its records may name
			// another (rows of more than 16 options read under binary-candidates-v1 by a
			// direct run).
			r.Meta, r.PromptVersion = m, m.PromptVersion
		}
	}
	entries, _, err := batch.ReadEntries(f)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %w", ErrNotResults, path, err)
	}
	debiased, calibrated := 0, 0
	for _, e := range entries {
		for _, run := range all {
			run.Rows++
		}
		if e.Error != nil {
			for _, run := range all {
				run.Errors++
			}
			continue
		}
		if e.Answers != nil {
			main.Answers = append(main.Answers, e.Answers)
			continue
		}
		r := e.Record
		key := string(r.ID) + "#" + fmt.Sprint(r.Line)
		if main.PromptVersion == "" {
			for _, run := range all {
				run.PromptVersion = r.PromptVersion
			}
		}
		d := decision(r, key, r.Chosen, false)
		main.Decisions = append(main.Decisions, d)
		// The companion runs hold every decision: a record without a calibration (or without
		// bias control) is its own uncalibrated (or raw) decision. Under the defaults a file
		// mixes both kinds: rows of option counts without a prior are decided raw, rows outside
		// the shipped profile's band stay uncalibrated.
		u := d
		if r.Calibration != nil {
			calibrated++
			u.Probability = r.Calibration.UncalibratedProbability
			u.Probs = d.Sample.Probabilities()
			u.Abstained = false
		}
		uncal.Decisions = append(uncal.Decisions, u)
		if r.Debias != nil {
			debiased++
			raw.Decisions = append(raw.Decisions, decision(r, key, r.Debias.RawChosen, true))
		} else {
			raw.Decisions = append(raw.Decisions, decision(r, key, r.Chosen, true))
		}
	}
	runs := []*Run{main}
	if calibrated > 0 {
		runs = append(runs, uncal)
	}
	if debiased > 0 {
		runs = append(runs, raw)
	}
	return runs, nil
}

// decision reads one record's decision with chosen as its choice: the record's own (raw
// false: debiased and calibrated, as the record says), or its raw one (raw true).
func decision(r *batch.Record, key, chosen string, raw bool) Decision {
	d := Decision{Key: key, Chosen: chosen, Label: r.Label, MS: r.MS, Sample: calibrate.Sample{Label: -1},
		Prompts: Prompts(r), PromptTokens: r.Stats.PromptTokens, DecodedTokens: r.Stats.DecodedTokens}
	binary := r.Candidates != nil
	d.Sample.Binary = binary
	method, shifts, sample := debias.None, 0, false
	if r.Debias != nil && !raw {
		method, sample = debias.Method(r.Debias.Method), r.Debias.PriorSample
		shifts = 1 + len(r.Debias.Permutations)
	}
	k := len(r.Options) + len(r.Candidates)
	d.Scoring = calibrate.ScoringOf(binary, method, shifts, k, sample)
	if dist := r.ManyDistribution(); dist != nil {
		// Scored by its distribution over every option: a knockout's letters are a pass's and a
		// shortlist's candidates the kept options' only, so neither enters the letter figures.
		d.Scoring, d.Sample.Binary = calibrate.ScoringShortlist, false
		if ko := r.Knockout; ko != nil {
			d.Scoring = calibrate.KnockoutScoring(ko.Scoring)
			if r.Label != "" {
				d.Knockout = knockoutPath(ko, r.Label)
			}
		}
		for i, o := range dist {
			if o.ID == r.Label {
				d.Sample.Label = i
			}
			d.Sample.Scores = append(d.Sample.Scores, math.Log(o.Probability))
		}
		d.Probs = d.Sample.Probabilities()
		d.Probability = r.Probability
		if r.Calibration != nil {
			d.Probs = r.Calibration.Probabilities
			d.Abstained = r.Abstained
		}
		return d
	}
	if sample {
		// A PriDe estimation row is scored by its full cyclic average, not as the other
		// rows of its run: it is left out of fitting (jev calibrate skips an empty scoring).
		d.Scoring = ""
	}
	for i, o := range r.Options {
		if o.ID == chosen {
			d.Letter = o.Letter
		}
		if o.ID == r.Label {
			d.GoldLetter = o.Letter
			d.Sample.Label = i
		}
	}
	for i, c := range r.Candidates {
		if c.ID == r.Label {
			d.Sample.Label = i
		}
	}
	switch {
	case method != debias.None && binary:
		d.Sample.Scores = r.Debias.Probabilities
	case method != debias.None:
		d.Sample.Scores = r.Debias.Scores
	case binary:
		for _, c := range r.Candidates {
			d.Sample.Scores = append(d.Sample.Scores, c.PYes)
		}
	default:
		lp := make([]float64, len(r.Options))
		for i, o := range r.Options {
			lp[i] = o.Logprob
		}
		d.Sample.Scores = debias.LogSoftmax(lp)
	}
	d.Probs = d.Sample.Probabilities()
	d.Probability = optionProbability(r, chosen)
	if r.Calibration != nil && !raw {
		d.Probs = r.Calibration.Probabilities
		d.Abstained = r.Abstained
	}
	if !raw {
		d.Probability = r.Probability
	}
	return d
}

// optionProbability is the raw probability of option id: its probability among the listed
// options (direct) or its p_yes (binary).
func optionProbability(r *batch.Record, id string) float64 {
	for _, o := range r.Options {
		if o.ID == id {
			return o.Probability
		}
	}
	for _, c := range r.Candidates {
		if c.ID == id {
			return c.PYes
		}
	}
	return math.NaN()
}

// Interval is a proportion's 95 % confidence interval.
type Interval struct {
	Low  float64 `json:"low"`
	High float64 `json:"high"`
}

// Wilson returns the Wilson score interval for k successes in n trials at 95 % (z = 1.96):
// (p + z²/2n ± z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n). It stays inside [0, 1] and is sound for
// small n and for p near 0 or 1, unlike p ± z·√(p(1−p)/n).
func Wilson(k, n int) Interval {
	if n == 0 {
		return Interval{0, 1}
	}
	const z = 1.959963984540054
	p, nf := float64(k)/float64(n), float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return Interval{max(0, center-half), min(1, center+half)}
}

// LabelStats are one label's precision, recall and F1 (sklearn's definitions; 0 where the
// denominator is 0) and support (rows with that gold label).
type LabelStats struct {
	Label     string  `json:"label"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	Support   int     `json:"support"`
	Predicted int     `json:"predicted"`
}

// Bin is one bin of a reliability diagram (calibrate.Reliability).
type Bin = calibrate.Bin

// Metrics are one run's figures over its labelled decisions (latency over all decisions).
type Metrics struct {
	Rows        int      `json:"rows"`
	Decided     int      `json:"decided"`
	Errors      int      `json:"errors"`
	Labelled    int      `json:"labelled"`
	Correct     int      `json:"correct"`
	Accuracy    float64  `json:"accuracy"`
	AccuracyCI  Interval `json:"accuracy_ci95"`
	MacroF1     float64  `json:"macro_f1"`
	ECE         float64  `json:"ece"`
	Reliability []Bin    `json:"reliability"`
	// Brier is the mean multi-class Brier score of the labelled rows (calibrate.Brier), in
	// [0, 2]; a binary row's p_yes are first normalised over its candidates (normalised), so
	// direct and binary runs compare. (jev calibrate's binary Brier sums the candidates' p_yes
	// as they are: the score its per-candidate maps are fitted to.)
	Brier float64 `json:"brier"`
	// Selective is the risk–coverage curve of the labelled rows ranked by the probability of
	// their choice, its area (AURC), accuracy at 80 % coverage and coverage at 5 % and 10 %
	// error (calibrate.RiskCoverage).
	Selective calibrate.Selective `json:"selective"`
	// Abstained counts the decisions the records mark as abstained; DecidedAccuracy is the
	// accuracy of the labelled rows that did not abstain, Coverage their share.
	Abstained       int     `json:"abstained"`
	Coverage        float64 `json:"coverage"`
	DecidedAccuracy float64 `json:"decided_accuracy"`
	// Labels holds per-label figures, sorted by label; Confusion[i][j] counts rows with gold
	// Labels[i] decided as Labels[j].
	Labels    []LabelStats `json:"labels"`
	Confusion [][]int      `json:"confusion"`
	// Letters counts chosen letters and GoldLetters the labels' letters (direct contract).
	Letters     map[string]int `json:"chosen_letters"`
	GoldLetters map[string]int `json:"gold_letters"`
	// TopLetter is the most chosen letter and TopLetterShare its share of the choices.
	TopLetter      string  `json:"top_letter"`
	TopLetterShare float64 `json:"top_letter_share"`
	// PromptsPerRow, PromptTokensPerRow and DecodedTokensPerRow are the means over the decided
	// rows of Decision's Prompts, PromptTokens and DecodedTokens: what a row costs.
	PromptsPerRow       float64 `json:"prompts_per_row"`
	PromptTokensPerRow  float64 `json:"prompt_tokens_per_row"`
	DecodedTokensPerRow float64 `json:"decoded_tokens_per_row"`
	// Knockout, for runs of knockout rows, says where the errors come from: the labelled rows
	// whose label survived its group pass, and how many of those the final pass got right.
	Knockout *KnockoutMetrics `json:"knockout,omitempty"`
	// Ranks says where the label stands among the run's probabilities (Decision.Probs) on the
	// labelled rows that score every option: nil when none does.
	Ranks         *RankMetrics `json:"ranks,omitempty"`
	LatencyP50MS  float64      `json:"latency_p50_ms"`
	LatencyP95MS  float64      `json:"latency_p95_ms"`
	DecisionsPerS *float64     `json:"decisions_per_s"`
}

// KnockoutMetrics splits a knockout run's errors between the group passes and the final one
// (Metrics.Knockout).
type KnockoutMetrics struct {
	Rows          int     `json:"rows"`           // labelled knockout rows
	GroupTop      int     `json:"group_top"`      // label chosen by its group's pass
	Reached       int     `json:"reached"`        // label survived into the final pass
	ReachedShare  float64 `json:"reached_share"`  // Reached / Rows
	RightInFinal  int     `json:"right_in_final"` // of Reached, chosen in the final pass
	FinalAccuracy float64 `json:"final_accuracy"` // RightInFinal / Reached
}

// RankMetrics is the label's rank among a run's probabilities (Metrics.Ranks): 1 when it is
// the most probable option, 1 + the number of options more probable than it otherwise (ties
// count in the label's favour).
type RankMetrics struct {
	Rows       int `json:"rows"`        // labelled rows that score every option
	MaxOptions int `json:"max_options"` // the most options one of those rows has
	// TopK[K] is the share of those rows whose label ranks K or better (top-K accuracy), for
	// each K of RankKs below MaxOptions.
	TopK     map[int]float64 `json:"top_k"`
	MeanRank float64         `json:"mean_rank"`
}

// RankKs are the K of the top-K accuracies Compute gives (Metrics.Ranks).
var RankKs = []int{3, 5, 10, 16}

// rankOf is the label's rank among probs (RankMetrics).
func rankOf(probs []float64, label int) int {
	rank := 1
	for _, p := range probs {
		if p > probs[label] {
			rank++
		}
	}
	return rank
}

// Compute returns a run's metrics.
func Compute(r *Run) Metrics {
	m := Metrics{Rows: r.Rows, Errors: r.Errors, Decided: len(r.Decisions), Letters: map[string]int{}, GoldLetters: map[string]int{}}
	var lat []float64
	var ranks []int
	maxOptions := 0
	labels := map[string]bool{}
	for _, d := range r.Decisions {
		lat = append(lat, d.MS)
		m.PromptsPerRow += float64(d.Prompts) / float64(len(r.Decisions))
		m.PromptTokensPerRow += float64(d.PromptTokens) / float64(len(r.Decisions))
		m.DecodedTokensPerRow += d.DecodedTokens / float64(len(r.Decisions))
		if d.Letter != "" {
			m.Letters[d.Letter]++
		}
		if d.Label == "" {
			continue
		}
		m.Labelled++
		if d.Chosen == d.Label {
			m.Correct++
		}
		if kp := d.Knockout; kp != nil {
			if m.Knockout == nil {
				m.Knockout = &KnockoutMetrics{}
			}
			k := m.Knockout
			k.Rows++
			if kp.GroupRank == 0 {
				k.GroupTop++
			}
			if kp.Reached {
				k.Reached++
				if d.Chosen == d.Label {
					k.RightInFinal++
				}
			}
		}
		if d.GoldLetter != "" {
			m.GoldLetters[d.GoldLetter]++
		}
		if l := d.Sample.Label; l >= 0 && l < len(d.Probs) {
			ranks = append(ranks, rankOf(d.Probs, l))
			maxOptions = max(maxOptions, len(d.Probs))
		}
		labels[d.Label], labels[d.Chosen] = true, true
	}
	if len(ranks) > 0 {
		m.Ranks = &RankMetrics{Rows: len(ranks), MaxOptions: maxOptions, TopK: map[int]float64{}}
		for _, k := range RankKs {
			if k >= maxOptions {
				break
			}
			n := 0
			for _, r := range ranks {
				if r <= k {
					n++
				}
			}
			m.Ranks.TopK[k] = float64(n) / float64(len(ranks))
		}
		for _, r := range ranks {
			m.Ranks.MeanRank += float64(r) / float64(len(ranks))
		}
	}
	if m.Labelled > 0 {
		m.Accuracy = float64(m.Correct) / float64(m.Labelled)
	}
	if k := m.Knockout; k != nil {
		k.ReachedShare = float64(k.Reached) / float64(k.Rows)
		if k.Reached > 0 {
			k.FinalAccuracy = float64(k.RightInFinal) / float64(k.Reached)
		}
	}
	m.AccuracyCI = Wilson(m.Correct, m.Labelled)
	m.Labels, m.Confusion, m.MacroF1 = perLabel(r.Decisions, labels)
	m.Reliability, m.ECE, m.Brier, m.Selective = calibration(r.Decisions)
	decidedRight, decidedLabelled := 0, 0
	for _, d := range r.Decisions {
		if d.Abstained {
			m.Abstained++
		} else if d.Label != "" {
			decidedLabelled++
			if d.Chosen == d.Label {
				decidedRight++
			}
		}
	}
	if m.Decided > 0 {
		m.Coverage = float64(m.Decided-m.Abstained) / float64(m.Decided)
	}
	if decidedLabelled > 0 {
		m.DecidedAccuracy = float64(decidedRight) / float64(decidedLabelled)
	}
	total := 0
	for l, n := range m.Letters {
		total += n
		if n > m.Letters[m.TopLetter] || (n == m.Letters[m.TopLetter] && l < m.TopLetter) {
			m.TopLetter = l
		}
	}
	if total > 0 {
		m.TopLetterShare = float64(m.Letters[m.TopLetter]) / float64(total)
	}
	m.LatencyP50MS, m.LatencyP95MS = Percentile(lat, 50), Percentile(lat, 95)
	if r.Meta != nil {
		if v := r.Meta.Throughput(); v > 0 { // over every run that wrote the file
			m.DecisionsPerS = &v
		}
	}
	return m
}

// perLabel computes per-label figures, the confusion matrix and macro-F1 (the unweighted mean
// F1 over every label that is a gold label or a prediction of a labelled row, as
// sklearn.metrics.f1_score(average="macro") does).
func perLabel(ds []Decision, set map[string]bool) ([]LabelStats, [][]int, float64) {
	labels := make([]string, 0, len(set))
	for l := range set {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	index := make(map[string]int, len(labels))
	for i, l := range labels {
		index[l] = i
	}
	conf := make([][]int, len(labels))
	for i := range conf {
		conf[i] = make([]int, len(labels))
	}
	for _, d := range ds {
		if d.Label != "" {
			conf[index[d.Label]][index[d.Chosen]]++
		}
	}
	stats := make([]LabelStats, len(labels))
	macro := 0.0
	for i, l := range labels {
		tp, support, predicted := conf[i][i], 0, 0
		for j := range labels {
			support += conf[i][j]
			predicted += conf[j][i]
		}
		s := LabelStats{Label: l, Support: support, Predicted: predicted}
		if predicted > 0 {
			s.Precision = float64(tp) / float64(predicted)
		}
		if support > 0 {
			s.Recall = float64(tp) / float64(support)
		}
		if s.Precision+s.Recall > 0 {
			s.F1 = 2 * s.Precision * s.Recall / (s.Precision + s.Recall)
		}
		stats[i] = s
		macro += s.F1
	}
	if len(labels) > 0 {
		macro /= float64(len(labels))
	}
	return stats, conf, macro
}

// normalised returns probs divided by their sum: a direct row's distribution unchanged (up to
// rounding), a binary row's p_yes per candidate as the distribution over its candidates that
// its ranking implies, so that one Brier score compares both contracts (summed as they are, 77
// candidates' p_yes give scores near 30 where a distribution's lie in [0, 2]).
func normalised(probs []float64) []float64 {
	sum := 0.0
	for _, p := range probs {
		sum += p
	}
	if sum <= 0 || math.IsNaN(sum) || math.IsInf(sum, 0) {
		return probs
	}
	out := make([]float64, len(probs))
	for i, p := range probs {
		out[i] = p / sum
	}
	return out
}

// calibration scores the labelled decisions' probabilities: the reliability diagram and ECE
// (calibrate.Reliability, 10 equal-width bins; a probability of exactly 1 falls in the last
// bin), the mean Brier score, and the risk–coverage curve.
func calibration(ds []Decision) ([]Bin, float64, float64, calibrate.Selective) {
	var conf []float64
	var right []bool
	var points []calibrate.Point
	brier, nb := 0.0, 0
	for _, d := range ds {
		if d.Label == "" || math.IsNaN(d.Probability) {
			continue
		}
		conf, right = append(conf, d.Probability), append(right, d.Chosen == d.Label)
		points = append(points, calibrate.Point{Confidence: d.Probability, Right: d.Chosen == d.Label})
		if d.Sample.Label >= 0 && len(d.Probs) > 0 {
			brier += calibrate.Brier(normalised(d.Probs), d.Sample.Label)
			nb++
		}
	}
	bins, ece := calibrate.Reliability(conf, right)
	if nb > 0 {
		brier /= float64(nb)
	}
	return bins, ece, brier, calibrate.RiskCoverage(points)
}

// Percentile returns the p-th percentile of v by linear interpolation between closest ranks
// (numpy.percentile's default); 0 for an empty slice.
func Percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	pos := p / 100 * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (pos-float64(lo))*(s[hi]-s[lo])
}

// Paired compares two runs on the labelled rows both decided (matched by id and line): rows
// only B gets right, rows only A gets right, and McNemar's exact two-sided p-value (a binomial
// test of the discordant pairs at ½).
type Paired struct {
	Against string  `json:"against"`
	Rows    int     `json:"rows"`
	Gained  int     `json:"gained"` // right in this run, wrong in the other
	Lost    int     `json:"lost"`   // wrong in this run, right in the other
	PValue  float64 `json:"p_value"`
}

// ComparePaired compares run b with run a (see Paired).
func ComparePaired(a, b *Run) Paired {
	right := map[string]bool{}
	for _, d := range a.Decisions {
		if d.Label != "" {
			right[d.Key] = d.Chosen == d.Label
		}
	}
	p := Paired{Against: a.Name}
	for _, d := range b.Decisions {
		ra, ok := right[d.Key]
		if !ok || d.Label == "" {
			continue
		}
		p.Rows++
		rb := d.Chosen == d.Label
		switch {
		case rb && !ra:
			p.Gained++
		case ra && !rb:
			p.Lost++
		}
	}
	p.PValue = mcnemarExact(p.Gained, p.Lost)
	return p
}

// mcnemarExact is the two-sided exact binomial p-value of b successes against c at p = ½:
// min(1, 2·P(X ≤ min(b, c))) with X ~ Binomial(b+c, ½).
func mcnemarExact(b, c int) float64 {
	n := b + c
	if n == 0 {
		return 1
	}
	k := min(b, c)
	tail := 0.0
	for i := 0; i <= k; i++ {
		tail += math.Exp(logChoose(n, i) - float64(n)*math.Ln2)
	}
	return min(1, 2*tail)
}

func logChoose(n, k int) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}
