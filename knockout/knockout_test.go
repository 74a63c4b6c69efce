package knockout_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/knockout"
)

func TestSizes(t *testing.T) {
	for _, tc := range []struct {
		n     int
		sizes []int
		keep  int
	}{
		{17, []int{9, 8}, 8},
		{33, []int{11, 11, 11}, 5},
		{77, []int{16, 16, 15, 15, 15}, 3},
		{256, slices.Repeat([]int{16}, 16), 1},
	} {
		sizes, keep := knockout.Sizes(tc.n)
		assert.Equal(t, tc.sizes, sizes, "n=%d", tc.n)
		assert.Equal(t, tc.keep, keep, "n=%d", tc.n)
		assert.LessOrEqual(t, keep*len(sizes), knockout.MaxPass, "n=%d: the survivors fit one pass", tc.n)
	}
}

func row(n int) (ids, descs []string) {
	for i := range n {
		ids = append(ids, fmt.Sprintf("o%d", i))
		descs = append(descs, strings.Repeat("x", 1+(i*7)%23))
	}
	return ids, descs
}

func TestPlansPartitionTheOptions(t *testing.T) {
	for _, n := range []int{17, 33, 77, 256} {
		ids, descs := row(n)
		for _, g := range knockout.Groupings {
			p, err := knockout.NewPlan(ids, descs, g, 1)
			require.NoError(t, err)
			sizes, keep := knockout.Sizes(n)
			assert.Equal(t, keep, p.Keep)
			var all []int
			for i, grp := range p.Groups {
				assert.Len(t, grp, sizes[i], "%s n=%d group %d", g, n, i)
				assert.True(t, slices.IsSorted(grp), "a pass lists its options in row order")
				all = append(all, grp...)
			}
			slices.Sort(all)
			for i := range n {
				assert.Equal(t, i, all[i], "%s n=%d: every option in exactly one group", g, n)
			}
			again, err := knockout.NewPlan(ids, descs, g, 1)
			require.NoError(t, err)
			assert.Equal(t, p, again, "deterministic")
		}
	}
	ids, descs := row(77)
	file, _ := knockout.NewPlan(ids, descs, knockout.File, 1)
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, file.Groups[0])
	s1, _ := knockout.NewPlan(ids, descs, knockout.Shuffle, 1)
	s2, _ := knockout.NewPlan(ids, descs, knockout.Shuffle, 2)
	assert.NotEqual(t, s1.Groups, s2.Groups, "the seed matters")
	assert.NotEqual(t, file.Groups, s1.Groups)
	// Length: every group's mean description length is within 1.5 characters of the others.
	l, _ := knockout.NewPlan(ids, descs, knockout.Length, 1)
	var means []float64
	for _, g := range l.Groups {
		total := 0
		for _, o := range g {
			total += len(descs[o])
		}
		means = append(means, float64(total)/float64(len(g)))
	}
	assert.Less(t, slices.Max(means)-slices.Min(means), 1.5, "%v", means)

	for _, n := range []int{16, 257} {
		ids, descs := row(n)
		_, err := knockout.NewPlan(ids, descs, "", 1)
		assert.ErrorIs(t, err, knockout.ErrPlan, "n=%d", n)
	}
	_, err := knockout.NewPlan(ids, descs, "alphabetical", 1)
	assert.ErrorIs(t, err, knockout.ErrPlan)
}

func TestSurvivors(t *testing.T) {
	assert.Equal(t, []int{1, 3}, knockout.Survivors([]float64{-3, -1, -5, -2}, 2))
	assert.Equal(t, []int{0, 2}, knockout.Survivors([]float64{-1, -2, -1, -2}, 2), "ties go to the earlier position")
	assert.Equal(t, []int{0, 1}, knockout.Survivors([]float64{-1, -2}, 5))
}

// passes simulates a knockout's passes: each group pass the log-softmax of groupScore over its
// options, the survivors by knockout.Survivors (row order), the final pass the log-softmax of
// finalScore over them.
func passes(p knockout.Plan, groupScore, finalScore func(o int) float64) (groupLogp [][]float64, final []int, finalLogp []float64) {
	for _, g := range p.Groups {
		scores := make([]float64, len(g))
		for k, o := range g {
			scores[k] = groupScore(o)
		}
		lp := debias.LogSoftmax(scores)
		groupLogp = append(groupLogp, lp)
		for _, s := range knockout.Survivors(lp, p.Keep) {
			final = append(final, g[s])
		}
	}
	slices.Sort(final)
	fs := make([]float64, len(final))
	for k, o := range final {
		fs[k] = finalScore(o)
	}
	return groupLogp, final, debias.LogSoftmax(fs)
}

// TestCombineIsExactUnderLuce: when every pass is a softmax over its options of fixed weights
// (Luce's choice axiom), Combine recovers the softmax over all n options exactly, sums to 1,
// and its argmax is the final pass's choice.
func TestCombineIsExactUnderLuce(t *testing.T) {
	for _, n := range []int{17, 77, 256} {
		ids, descs := row(n)
		p, err := knockout.NewPlan(ids, descs, knockout.Shuffle, 3)
		require.NoError(t, err)
		w := make([]float64, n)
		for i := range w {
			w[i] = math.Sin(float64(i)*1.7) * 4
		}
		weight := func(o int) float64 { return w[o] }
		groupLogp, final, finalLogp := passes(p, weight, weight)
		got := knockout.Combine(n, p.Groups, groupLogp, final, finalLogp)
		want := debias.LogSoftmax(w)
		total := 0.0
		for i := range got {
			assert.InDelta(t, want[i], got[i], 1e-9, "n=%d option %d", n, i)
			total += math.Exp(got[i])
		}
		assert.InDelta(t, 1, total, 1e-12)
		best := final[slices.Index(finalLogp, slices.Max(finalLogp))]
		assert.Equal(t, best, slices.Index(got, slices.Max(got)), "n=%d: the argmax is the final choice", n)
	}
}

// TestCombineWhenPassesDisagreeWithLuce: with pass scores that no weights explain, the
// distribution still sums to 1, an eliminated option never outweighs every survivor of its
// group, and the group pass's reading can overturn the final pass's choice.
func TestCombineWhenPassesDisagreeWithLuce(t *testing.T) {
	groups := [][]int{{0, 1, 2}, {3, 4, 5}}
	groupLogp := [][]float64{debias.LogSoftmax([]float64{2, 1, -3}), debias.LogSoftmax([]float64{0, 0.5, 5})}
	final := []int{0, 1, 4, 5}
	finalLogp := debias.LogSoftmax([]float64{1, 3, -1, 0})
	got := knockout.Combine(6, groups, groupLogp, final, finalLogp)
	total := 0.0
	for _, v := range got {
		total += math.Exp(v)
	}
	assert.InDelta(t, 1, total, 1e-12)
	assert.Less(t, got[2], max(got[0], got[1]))
	assert.Less(t, got[3], max(got[4], got[5]))
	// Option 2, eliminated, is its group reading on the final pass's scale: c = the mean of
	// (final − group) over the survivors 0 and 1.
	c := (finalLogp[0] - groupLogp[0][0] + finalLogp[1] - groupLogp[0][1]) / 2
	assert.InDelta(t, groupLogp[0][2]+c-(finalLogp[1]+groupLogp[0][1]+c)/2, got[2]-got[1], 1e-12)

	// The final pass prefers option 4 to option 0 by 0.2. Option 0's two readings agree (3
	// above option 1 in both passes); option 4's do not: the final pass puts it 0.7 above
	// option 5, its group 0.5 below. The fit splits the difference, which takes 0.3 from
	// option 4, and chooses option 0.
	groupLogp = [][]float64{debias.LogSoftmax([]float64{3, 0, -1}), debias.LogSoftmax([]float64{-1, 0, 0.5})}
	final = []int{0, 1, 4, 5}
	finalLogp = debias.LogSoftmax([]float64{1, -2, 1.2, 0.5})
	got = knockout.Combine(6, groups, groupLogp, final, finalLogp)
	assert.Equal(t, 0, slices.Index(got, slices.Max(got)), "the group readings overturn the final pass")
	assert.InDelta(t, 0.3-0.2, got[0]-got[4], 1e-12)
}

// TestCombineIsTheLeastSquaresFit: on random pass scores, Combine equals the least-squares
// solution of every pass's measurements (log w_s = finalLogp(s) for the survivors, log w_i =
// groupLogp(i) + b_g for every option of group g), solved here by the normal equations.
func TestCombineIsTheLeastSquaresFit(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{17, 40, 77} {
		ids, descs := row(n)
		p, err := knockout.NewPlan(ids, descs, knockout.Shuffle, uint64(n))
		require.NoError(t, err)
		random := func(int) float64 { return rng.NormFloat64() * 2 }
		groupLogp, final, finalLogp := passes(p, random, random)

		// Unknowns: log w_0..log w_{n-1}, then b_0..b_{G-1}; one equation per measurement.
		m := n + len(p.Groups)
		var rows [][]float64
		var ys []float64
		for k, o := range final {
			r := make([]float64, m)
			r[o] = 1
			rows, ys = append(rows, r), append(ys, finalLogp[k])
		}
		for g, members := range p.Groups {
			for k, o := range members {
				r := make([]float64, m)
				r[o], r[n+g] = 1, -1
				rows, ys = append(rows, r), append(ys, groupLogp[g][k])
			}
		}
		want := debias.LogSoftmax(leastSquares(rows, ys)[:n])
		got := knockout.Combine(n, p.Groups, groupLogp, final, finalLogp)
		for i := range want {
			assert.InDelta(t, want[i], got[i], 1e-9, "n=%d option %d", n, i)
		}
		assert.True(t, slices.Contains(final, slices.Index(got, slices.Max(got))), "n=%d: the argmax is a survivor", n)
	}
}

// leastSquares solves min ‖A x − y‖² by the normal equations AᵀA x = Aᵀy, Gauss–Jordan with
// partial pivoting.
func leastSquares(a [][]float64, y []float64) []float64 {
	m := len(a[0])
	ata := make([][]float64, m)
	for i := range ata {
		ata[i] = make([]float64, m+1)
		for r, row := range a {
			for j := range m {
				ata[i][j] += row[i] * row[j]
			}
			ata[i][m] += row[i] * y[r]
		}
	}
	for c := range m {
		piv := c
		for r := c + 1; r < m; r++ {
			if math.Abs(ata[r][c]) > math.Abs(ata[piv][c]) {
				piv = r
			}
		}
		ata[c], ata[piv] = ata[piv], ata[c]
		for r := range m {
			if r == c {
				continue
			}
			f := ata[r][c] / ata[c][c]
			for j := c; j <= m; j++ {
				ata[r][j] -= f * ata[c][j]
			}
		}
	}
	x := make([]float64, m)
	for i := range x {
		x[i] = ata[i][m] / ata[i][i]
	}
	return x
}
