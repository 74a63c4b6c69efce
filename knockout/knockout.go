// Package knockout decides a row of more options than one prompt can list (the direct
// contract's 16 letters) as a knockout: the options are split into balanced groups of at most
// 16, every group is decided as a row of its own, the best Keep options of each group survive,
// and the survivors (at most 16) are decided in a final pass. It plans the groups, picks the
// survivors and combines the passes into one distribution over every option, whose argmax is
// the row's choice. Every pass is an ordinary decision under the unchanged contract; this
// package is the arithmetic above it, pure Go and tested on hand-made numbers. gojev.Decider
// runs it for rows of 17 to 256 options.
package knockout

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/gojev/gojev/debias"
)

// MaxPass is the most options one pass lists (contract.MaxOptions); MaxOptions the most a
// knockout takes: MaxPass groups of MaxPass, one survivor each.
const (
	MaxPass    = 16
	MaxOptions = MaxPass * MaxPass
)

// Groupings: how the options are split into groups. Every grouping is a function of the row
// alone (its option ids, descriptions and the seed), never of what else is decided with it.
const (
	// File keeps the row's order: consecutive runs of options.
	File = "file"
	// Shuffle shuffles the options with a generator seeded by the seed and the row's option
	// ids, then splits them in that order (the default).
	Shuffle = "shuffle"
	// Length sorts the options by description length and deals them out in a serpentine
	// (1, 2, …, g, g, …, 2, 1, …), so every group gets long and short descriptions alike
	// and the pass prompts have similar lengths.
	Length = "length"
)

// Groupings lists the groupings.
var Groupings = []string{Shuffle, File, Length}

// ErrPlan: a knockout cannot be planned (too few or too many options, an unknown grouping).
var ErrPlan = errors.New("knockout: cannot plan")

// Plan is a knockout of N options: Groups holds each group's option indices (into the row,
// in the order the group's pass lists them: the row's order), Keep how many of each group
// survive into the final pass.
type Plan struct {
	N        int     `json:"n"`
	Grouping string  `json:"grouping"`
	Groups   [][]int `json:"groups"`
	Keep     int     `json:"keep"`
}

// Sizes returns the group sizes and the number kept per group for n options: g = ⌈n/16⌉
// groups whose sizes differ by at most one (the larger first), and keep = ⌊16/g⌋, so that the
// g·keep survivors fit one final pass.
func Sizes(n int) (sizes []int, keep int) {
	g := (n + MaxPass - 1) / MaxPass
	for i := range g {
		s := n / g
		if i < n%g {
			s++
		}
		sizes = append(sizes, s)
	}
	return sizes, MaxPass / g
}

// NewPlan plans the knockout of a row's options: ids and descriptions in row order (ids must be
// unique), MaxPass < n ≤ MaxOptions, and a grouping (File, Shuffle, Length; "" is Shuffle).
// Errors wrap ErrPlan.
func NewPlan(ids, descriptions []string, grouping string, seed uint64) (Plan, error) {
	n := len(ids)
	if grouping == "" {
		grouping = Shuffle
	}
	if n <= MaxPass || n > MaxOptions || len(descriptions) != n {
		return Plan{}, fmt.Errorf("%w: %d options (a knockout takes %d to %d)", ErrPlan, n, MaxPass+1, MaxOptions)
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sizes, keep := Sizes(n)
	p := Plan{N: n, Grouping: grouping, Keep: keep, Groups: make([][]int, len(sizes))}
	switch grouping {
	case File:
		at := 0
		for g, s := range sizes {
			p.Groups[g] = slices.Clone(order[at : at+s])
			at += s
		}
	case Shuffle:
		h := fnv.New64a()
		for _, id := range ids {
			h.Write([]byte(id))
			h.Write([]byte{0})
		}
		r := rand.New(rand.NewPCG(seed, h.Sum64()))
		r.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		at := 0
		for g, s := range sizes {
			p.Groups[g] = slices.Clone(order[at : at+s])
			slices.Sort(p.Groups[g])
			at += s
		}
	case Length:
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(descriptions[a]), len(descriptions[b])) })
		g := len(sizes)
		next := 0
		for round := 0; next < n; round++ {
			for k := range g {
				gi := k
				if round%2 == 1 {
					gi = g - 1 - k
				}
				if len(p.Groups[gi]) < sizes[gi] && next < n {
					p.Groups[gi] = append(p.Groups[gi], order[next])
					next++
				}
			}
		}
		for gi := range p.Groups {
			slices.Sort(p.Groups[gi])
		}
	default:
		return Plan{}, fmt.Errorf("%w: unknown grouping %q (want %v)", ErrPlan, grouping, Groupings)
	}
	return p, nil
}

// Survivors returns the positions (into scores) of the keep highest scores, in position
// order; ties go to the earlier position.
func Survivors(scores []float64, keep int) []int {
	idx := make([]int, len(scores))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(scores[b], scores[a]) })
	out := slices.Clone(idx[:min(keep, len(idx))])
	slices.Sort(out)
	return out
}

// RuleLeastSquares names Combine's rule in records (gojev.Knockout.Rule): the row's choice is
// the argmax of the least-squares fit of every pass.
const RuleLeastSquares = "least-squares"

// Combine turns a knockout's passes into log-probabilities over all n options (row order).
// groups[g] are the option indices of group g and groupLogp[g] their log-probabilities in
// that pass (over the group's options); final are the survivors' option indices and finalLogp
// their log-probabilities in the final pass.
//
// The model behind it is Luce's choice axiom (Luce, Individual Choice Behavior, 1959): option
// i has a weight w_i, and a pass over a set A chooses i with w_i / Σ_{k∈A} w_k, which is what a
// softmax over a subset of options is when the scores do not depend on which other options are
// listed. Each pass therefore measures log w_i up to its own constant (log Σ_{k∈A} w_k): the
// final pass gives log w_s = finalLogp(s) + a, group g gives log w_i = groupLogp(i) + b_g.
// Combine takes the least-squares fit of every pass's measurements (a = 0 fixes the scale):
// with c_g = mean over group g's survivors s of (finalLogp(s) − groupLogp(s)), b_g = c_g, so
// a survivor gets log w_s = (finalLogp(s) + groupLogp(s) + c_g) / 2, the mean of its two
// measurements on the final pass's scale, and an option eliminated in group g gets log w_e =
// groupLogp(e) + c_g, its one measurement. The weights are normalised over all n. When the
// passes agree with Luce exactly this is the softmax of the weights, and a survivor's two
// measurements coincide; when they do not, the group pass's reading of a survivor corrects the
// final pass's (measured on Banking77's 77 intents: README, the knockout). The result sums to
// 1, and its argmax is a survivor: some survivor s of each group has finalLogp(s) −
// groupLogp(s) ≥ c_g, so log w_s ≥ groupLogp(s) + c_g ≥ log w_e for every e the group
// eliminated (they scored no higher than s there).
func Combine(n int, groups [][]int, groupLogp [][]float64, final []int, finalLogp []float64) []float64 {
	logw := make([]float64, n)
	inFinal := make(map[int]float64, len(final))
	for i, o := range final {
		inFinal[o] = finalLogp[i]
	}
	for g, members := range groups {
		c, k := 0.0, 0
		for p, o := range members {
			if f, ok := inFinal[o]; ok {
				c += f - groupLogp[g][p]
				k++
			}
		}
		if k == 0 { // no survivor: nothing places the group on the final pass's scale
			for _, o := range members {
				logw[o] = math.Inf(-1)
			}
			continue
		}
		c /= float64(k)
		for p, o := range members {
			if f, ok := inFinal[o]; ok {
				logw[o] = (f + groupLogp[g][p] + c) / 2
			} else {
				logw[o] = groupLogp[g][p] + c
			}
		}
	}
	return debias.LogSoftmax(logw)
}
