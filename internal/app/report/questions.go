package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/pyjson"
	"github.com/gojev/gojev/systemone"
)

// QuestionMetrics are one named question's figures over a file of typed rows, each beside a
// trivial baseline. Choice: accuracy (and the baseline of always choosing the most frequent
// label) and the ECE of the chosen criterion's probability. Noul: AUROC of P(yes) (chance
// 0.5), ECE of P(yes) against the labels, Brier, and accuracy at 0.5 (baseline: the majority
// label). Score: the MAE of the expected score against the label level (baseline: always the
// labels' median), Spearman's ρ between the two (baseline 0), and the share whose most probable
// level is the label (baseline: the most frequent level).
type QuestionMetrics struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	Answers  int    `json:"answers"`
	Labelled int    `json:"labelled"`

	Accuracy         float64  `json:"accuracy,omitempty"`
	AccuracyCI       Interval `json:"accuracy_ci"`
	BaselineAccuracy float64  `json:"baseline_accuracy,omitempty"`
	ECE              float64  `json:"ece,omitempty"`

	// AUROC is nil when the labels are all true or all false (no pair to rank).
	AUROC *float64 `json:"auroc,omitempty"`
	Brier float64  `json:"brier,omitempty"`
	// BaseRate is the share of labelled nouls that are true.
	BaseRate float64 `json:"base_rate,omitempty"`

	MAE         float64 `json:"mae,omitempty"`
	BaselineMAE float64 `json:"baseline_mae,omitempty"`
	Spearman    float64 `json:"spearman,omitempty"`
	Exact       float64 `json:"exact,omitempty"`
}

// questionMetrics computes every named question's metrics over typed rows' records, in the
// order the names first appear.
func questionMetrics(recs []*batch.AnswersRecord) []QuestionMetrics {
	type item struct {
		a     systemone.Answer
		label any
	}
	var names []string
	by := map[string][]item{}
	types := map[string]string{}
	for _, r := range recs {
		for _, a := range r.Answers {
			if _, ok := by[a.Name]; !ok {
				names = append(names, a.Name)
			}
			by[a.Name] = append(by[a.Name], item{a: a.Answer, label: a.Label})
			types[a.Name] = a.Type
		}
	}
	out := make([]QuestionMetrics, 0, len(names))
	for _, n := range names {
		m := QuestionMetrics{Name: n, Type: types[n], Answers: len(by[n])}
		var labelled []item
		for _, it := range by[n] {
			if it.label != nil {
				labelled = append(labelled, it)
			}
		}
		m.Labelled = len(labelled)
		if m.Labelled == 0 {
			out = append(out, m)
			continue
		}
		switch m.Type {
		case "choice":
			var conf []float64
			var right []bool
			counts := map[string]int{}
			for _, it := range labelled {
				l := fmt.Sprint(it.label)
				counts[l]++
				conf = append(conf, prob(it.a.Probabilities, it.a.Choice))
				right = append(right, it.a.Choice == l)
			}
			m.Accuracy, m.AccuracyCI = shareRight(right)
			m.BaselineAccuracy = float64(maxCount(counts)) / float64(len(labelled))
			_, m.ECE = calibrate.Reliability(conf, right)
		case "noul":
			var pos, neg, ps []float64
			var ys, right []bool
			brier := 0.0
			for _, it := range labelled {
				y, _ := it.label.(bool)
				p := it.a.Noul
				ps, ys = append(ps, p), append(ys, y)
				right = append(right, (p >= 0.5) == y)
				if y {
					pos = append(pos, p)
					brier += (1 - p) * (1 - p)
				} else {
					neg = append(neg, p)
					brier += p * p
				}
			}
			if len(pos) > 0 && len(neg) > 0 {
				auc := calibrate.AUROC(pos, neg)
				m.AUROC = &auc
			}
			_, m.ECE = calibrate.Reliability(ps, ys)
			m.Brier = brier / float64(len(labelled))
			m.Accuracy, m.AccuracyCI = shareRight(right)
			m.BaseRate = float64(len(pos)) / float64(len(labelled))
			m.BaselineAccuracy = math.Max(m.BaseRate, 1-m.BaseRate)
		case "score":
			var pred, truth []float64
			var exact []bool
			counts := map[string]int{}
			for _, it := range labelled {
				l, _ := strconv.ParseFloat(fmt.Sprint(it.label), 64)
				pred, truth = append(pred, it.a.Score), append(truth, l)
				exact = append(exact, argmaxLevel(it.a.Probabilities) == int(l))
				counts[fmt.Sprint(it.label)]++
			}
			med := median(truth)
			for i := range pred {
				m.MAE += math.Abs(pred[i]-truth[i]) / float64(len(pred))
				m.BaselineMAE += math.Abs(med-truth[i]) / float64(len(pred))
			}
			m.Spearman = spearman(pred, truth)
			m.Exact, m.AccuracyCI = shareRight(exact)
			m.BaselineAccuracy = float64(maxCount(counts)) / float64(len(labelled))
		}
		out = append(out, m)
	}
	return out
}

// prob is the probability an answer's ordered probabilities give key.
func prob(o pyjson.Object, key string) float64 {
	for _, m := range o {
		if m.Key == key {
			p, _ := m.Value.(float64)
			return p
		}
	}
	return 0
}

// argmaxLevel is the position of a score's most probable level (the first on a tie).
func argmaxLevel(o pyjson.Object) int {
	best, top := 0, -1.0
	for i, m := range o {
		if p, _ := m.Value.(float64); p > top {
			best, top = i, p
		}
	}
	return best
}

func shareRight(right []bool) (float64, Interval) {
	k := 0
	for _, r := range right {
		if r {
			k++
		}
	}
	if len(right) == 0 {
		return 0, Interval{}
	}
	return float64(k) / float64(len(right)), Wilson(k, len(right))
}

func maxCount(m map[string]int) int {
	best := 0
	for _, c := range m {
		best = max(best, c)
	}
	return best
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// spearman is Spearman's ρ: Pearson's correlation of the two samples' ranks (ties share the
// mean of their ranks); 0 when either sample is constant.
func spearman(a, b []float64) float64 {
	ra, rb := ranks(a), ranks(b)
	ma, mb := 0.0, 0.0
	for i := range ra {
		ma += ra[i] / float64(len(ra))
		mb += rb[i] / float64(len(rb))
	}
	var sab, saa, sbb float64
	for i := range ra {
		sab += (ra[i] - ma) * (rb[i] - mb)
		saa += (ra[i] - ma) * (ra[i] - ma)
		sbb += (rb[i] - mb) * (rb[i] - mb)
	}
	if saa == 0 || sbb == 0 {
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

// ranks gives each value its rank from 1, ties the mean of their ranks.
func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(i, j int) bool { return v[idx[i]] < v[idx[j]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
			j++
		}
		for k := i; k <= j; k++ {
			r[idx[k]] = float64(i+j)/2 + 1
		}
		i = j + 1
	}
	return r
}

// writeQuestions writes the typed questions' table.
func writeQuestions(w io.Writer, runs []RunReport) {
	var b strings.Builder
	for _, r := range runs {
		for _, q := range r.Questions {
			if b.Len() == 0 {
				fmt.Fprintf(&b, "%-28s %-14s %-6s %6s  %s\n", "run", "question", "type", "rows", "figures (labelled rows; baseline in brackets)")
			}
			var figs string
			switch {
			case q.Labelled == 0:
				figs = "no labels"
			case q.Type == "choice":
				figs = fmt.Sprintf("accuracy %.1f%% [%.1f, %.1f] (majority %.1f%%), ECE %.3f", 100*q.Accuracy, 100*q.AccuracyCI.Low, 100*q.AccuracyCI.High, 100*q.BaselineAccuracy, q.ECE)
			case q.Type == "noul":
				auc := "n/a (one class)"
				if q.AUROC != nil {
					auc = fmt.Sprintf("%.3f (0.5)", *q.AUROC)
				}
				figs = fmt.Sprintf("AUROC %s, ECE %.3f, Brier %.3f, accuracy@0.5 %.1f%% (majority %.1f%%)", auc, q.ECE, q.Brier, 100*q.Accuracy, 100*q.BaselineAccuracy)
			case q.Type == "score":
				figs = fmt.Sprintf("MAE %.3f (median %.3f), Spearman ρ %.3f (0), exact %.1f%% (most frequent %.1f%%)", q.MAE, q.BaselineMAE, q.Spearman, 100*q.Exact, 100*q.BaselineAccuracy)
			}
			fmt.Fprintf(&b, "%-28s %-14s %-6s %6d  %s\n", truncate(r.Name, 28), truncate(q.Name, 14), q.Type, q.Labelled, figs)
		}
	}
	_, _ = io.WriteString(w, b.String())
}
