package gojev_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/knockout"
)

// scripted is the model-free runtime of the knockout tests: at a direct prompt's end the letter
// of each listed option scores that option's description's value in Scores, plus Bias[letter]
// (a position bias).
type scripted = backendtest.Scripted

func manyOptions(n int) []contract.Option {
	out := make([]contract.Option, n)
	for i := range out {
		out[i] = contract.Option{ID: fmt.Sprintf("o%02d", i), Description: fmt.Sprintf("Option %d.", i)}
	}
	return out
}

// decideScripted decides one knockout row of opts (groups in file order) on rt.
func decideScripted(t *testing.T, rt *scripted, opts []contract.Option, label string) *gojev.Result {
	t.Helper()
	d, err := gojev.New(context.Background(), rt, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout, Grouping: knockout.File}})
	require.NoError(t, err)
	defer d.Close()
	res, err := d.Decide(context.Background(), contract.Row{ID: "r", State: "s", Question: "q", Options: opts, Label: label})
	require.NoError(t, err)
	require.NotNil(t, res.Knockout)
	return res
}

// TestKnockoutCarriesTheRunnerUp is the hand-built case: the model favours letter B, so in
// group 1 the weak option X, listed at B, beats the gold option G, listed at C. Keeping 8 of
// each group carries G into the final pass, where X is listed first (A, no bias) and G second
// (B): G wins. A knockout keeping only each group's winner would have lost it.
func TestKnockoutCarriesTheRunnerUp(t *testing.T) {
	opts := manyOptions(20)
	scores := map[string]float64{}
	for i, o := range opts {
		scores[o.Description] = -1 - float64(i)/10
	}
	scores[opts[0].Description] = -5 // eliminated in group 1, so that X leads the final pass
	scores[opts[1].Description] = 0  // X
	scores[opts[2].Description] = 2.5
	res := decideScripted(t, &scripted{Scores: scores, Bias: map[byte]float64{'B': 3}}, opts, opts[2].ID)
	ko := res.Knockout
	assert.Equal(t, 8, ko.Keep)
	require.Len(t, ko.Passes, 3)
	g1, final := ko.Passes[0], ko.Passes[2]
	assert.Equal(t, opts[1].ID, g1.Chosen, "group 1's pass chose X")
	assert.Contains(t, g1.Survivors, opts[2].ID, "G survives as group 1's runner-up")
	assert.NotContains(t, g1.Survivors, opts[0].ID)
	assert.True(t, final.Final)
	assert.Equal(t, []string{opts[1].ID, opts[2].ID}, final.Options[:2])
	assert.Equal(t, opts[2].ID, res.Chosen, "G wins the final pass")
	assert.True(t, *res.Correct)
	assert.Equal(t, "B", res.ChosenLetter, "the final pass's letter")
	assert.Equal(t, final.PromptSHA256, res.PromptSHA256, "the seed's fields are the final pass's")
	checkDistribution(t, res, 20)
}

// TestKnockoutReadsEveryPass is the hand-built case where the row's choice is not the final
// pass's: 17 options in file order make groups of 9 (A–I) and 8 (A–H), 8 of each survive (all
// of group 2), and the model favours letter J by 3, which only the final pass lists. There J
// holds X (option 10, score 0), which beats G (option 5, score 2) by 3 − 2; the group passes,
// which list no J, read G 2 above X. Combine's least-squares fit keeps G at 2 and puts X at
// (3 + 0 + 3/8)/2 on the final pass's scale (3/8: X's bias, averaged over its group's eight
// survivors, is the offset between its group's and the final pass's scales), so G is chosen,
// with its final-pass letter.
func TestKnockoutReadsEveryPass(t *testing.T) {
	opts := manyOptions(17)
	scores := map[string]float64{}
	for i, o := range opts {
		scores[o.Description] = -1 - float64(i)/10
	}
	scores[opts[1].Description] = -5 // eliminated in group 1
	scores[opts[5].Description] = 2  // G
	scores[opts[10].Description] = 0 // X, at J in the final pass
	res := decideScripted(t, &scripted{Scores: scores, Bias: map[byte]float64{'J': 3}}, opts, opts[5].ID)
	ko := res.Knockout
	require.Len(t, ko.Passes, 3)
	final := ko.Passes[2]
	require.Len(t, final.Options, 16)
	assert.Equal(t, opts[10].ID, final.Options[9], "X is listed at J")
	assert.Equal(t, opts[10].ID, final.Chosen, "the final pass alone chooses X")
	assert.Equal(t, opts[5].ID, res.Chosen, "the row chooses G")
	assert.True(t, *res.Correct)
	assert.Equal(t, "E", res.ChosenLetter, "G's letter in the final pass")
	var pg, px float64
	for _, o := range ko.Distribution {
		switch o.ID {
		case opts[5].ID:
			pg = o.Probability
		case opts[10].ID:
			px = o.Probability
		}
	}
	assert.InDelta(t, 2-(3+3.0/8)/2, math.Log(pg/px), 1e-9)
	checkDistribution(t, res, 17)

	// A record written with the final pass's choice (an earlier gojev's rule) recombines to
	// exactly this result through its JSON.
	b, err := json.Marshal(res)
	require.NoError(t, err)
	var old gojev.Result
	require.NoError(t, json.Unmarshal(b, &old))
	assert.Equal(t, knockout.RuleLeastSquares, ko.Rule)
	wrong := false
	old.Chosen, old.ChosenLetter, old.Probability, old.Correct = final.Chosen, "J", 0.5, &wrong
	old.Knockout.Rule = ""
	old.Knockout.Distribution[5].Probability = 0
	require.NoError(t, gojev.RecombineKnockout(&old))
	again, err := json.Marshal(&old)
	require.NoError(t, err)
	assert.JSONEq(t, string(b), string(again))
	old.Knockout.Passes[0].Options[0] = "nobody"
	require.ErrorContains(t, gojev.RecombineKnockout(&old), `option "nobody"`)
	require.Error(t, gojev.RecombineKnockout(&gojev.Result{}))
}

// checkDistribution: one probability per option, summing to 1, the choice its argmax and
// Probability its share.
func checkDistribution(t *testing.T, res *gojev.Result, n int) {
	t.Helper()
	ko := res.Knockout
	require.Len(t, ko.Distribution, n)
	total, best := 0.0, 0
	for i, o := range ko.Distribution {
		total += o.Probability
		if o.Probability > ko.Distribution[best].Probability {
			best = i
		}
	}
	assert.InDelta(t, 1, total, 1e-9)
	assert.Equal(t, res.Chosen, ko.Distribution[best].ID, "the final choice is the distribution's argmax")
	assert.InDelta(t, ko.Distribution[best].Probability, res.Probability, 1e-12)
}

// TestKnockoutOnTheSmallModel: rows of 17, 33 and 256 options decide; each pass's prompt and
// log-probabilities are exactly those of deciding its sub-row alone (17 and 33); a row of 257
// options is a row error.
func TestKnockoutOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	// The default bias control, with no prior for the small model: raw passes.
	d := openDefault(t, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}})
	for _, n := range []int{17, 33, 256} {
		row := contract.Row{ID: fmt.Sprintf("n%d", n), State: map[string]any{"message": "I was charged twice."}, Question: "Which option?", Options: manyOptions(n), Label: "o03"}
		res, err := d.Decide(ctx, row)
		require.NoError(t, err, "n=%d", n)
		ko := res.Knockout
		require.NotNil(t, ko, "n=%d", n)
		sizes, keep := knockout.Sizes(n)
		require.Len(t, ko.Passes, len(sizes)+1)
		assert.Equal(t, keep, ko.Keep)
		assert.Equal(t, knockout.Shuffle, ko.Grouping)
		assert.Equal(t, "raw", ko.Scoring)
		checkDistribution(t, res, n)
		passTokens := 0
		for p, pass := range ko.Passes {
			if p < len(sizes) {
				assert.Len(t, pass.Options, sizes[p])
				assert.Len(t, pass.Survivors, keep)
			} else {
				assert.Len(t, pass.Options, keep*len(sizes))
			}
			passTokens += pass.NPromptTokens
			if n == 256 {
				continue // 17 passes: the two smaller rows check every pass against deciding it alone
			}
			sub := contract.Row{ID: row.ID, State: row.State, Question: row.Question}
			for _, id := range pass.Options {
				sub.Options = append(sub.Options, contract.Option{ID: id, Description: row.Options[mustAtoi(t, id[1:])].Description})
			}
			alone, err := d.Decide(ctx, sub)
			require.NoError(t, err)
			assert.Equal(t, alone.PromptSHA256, pass.PromptSHA256, "n=%d pass %d", n, p)
			lp := make([]float64, len(alone.Options))
			for i, o := range alone.Options {
				lp[i] = o.Logprob
			}
			want := debias.LogSoftmax(lp)
			assert.Equal(t, want, pass.Logprobs, "n=%d pass %d: bit for bit", n, p)
			assert.Equal(t, alone.Chosen, pass.Chosen)
		}
		assert.Equal(t, passTokens, res.Stats.PromptTokens, "the row's prompt tokens are its passes'")
	}
	_, err := d.Decide(ctx, contract.Row{ID: "x", State: "s", Question: "q", Options: manyOptions(257)})
	assert.ErrorIs(t, err, contract.ErrRow)
	assert.ErrorIs(t, err, contract.ErrTooManyRowOptions)
}

func mustAtoi(t *testing.T, s string) int {
	n, err := strconv.Atoi(s)
	require.NoError(t, err)
	return n
}

// TestKnockoutWithPriDeAndBinaryOnTheSmallModel: PriDe's estimation takes one sub-row of each
// pass size of a 33-option row (11 for its groups, 15 for its final pass) and gives no
// decision for the row itself; with that prior every pass is debiased. The binary contract
// decides the same row directly, one prompt per option.
func TestKnockoutWithPriDeAndBinaryOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	row := contract.Row{ID: "n33", State: map[string]any{"message": "My card does not work abroad."}, Question: "Which option?", Options: manyOptions(33), Label: "o07"}
	d := openDefault(t, gojev.Options{Debias: debias.PriDe, Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}})
	prior, outs, err := d.EstimatePrior(ctx, []contract.Row{row})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Nil(t, outs[0].Result, "a knockout row of the sample is decided after the estimate")
	assert.NoError(t, outs[0].Err)
	for _, k := range []int{11, 15} {
		lp, ok := prior.ByOptions[k]
		require.True(t, ok, "a prior for passes of %d options", k)
		assert.Equal(t, 1, lp.SampleRows)
	}
	assert.Len(t, prior.ByOptions, 2)
	d.SetPrior(prior)
	res, err := d.Decide(ctx, row)
	require.NoError(t, err)
	require.NotNil(t, res.Knockout)
	assert.Equal(t, "pride", res.Knockout.Scoring)
	assert.Nil(t, res.Debias)
	for _, p := range res.Knockout.Passes {
		q, _ := prior.For(len(p.Options))
		assert.NotNil(t, q)
	}
	checkDistribution(t, res, 33)

	b := openDefault(t, gojev.Options{Contract: gojev.Binary})
	bres, err := b.Decide(ctx, row)
	require.NoError(t, err)
	assert.Nil(t, bres.Knockout, "the binary contract needs no knockout")
	assert.Len(t, bres.Candidates, 33)
}

// recording is scripted that takes a while per decode and logs, for each, which row (its
// evidence) and how many options the prompt lists.
type recording struct {
	*scripted
	mu  sync.Mutex
	log []string
}

func (r *recording) NextToken(ctx context.Context, prompt, ids []int32) (backend.Readout, error) {
	time.Sleep(20 * time.Millisecond)
	text, _ := r.Detokenize(ctx, prompt)
	row := text[strings.Index(text, "row-") : strings.Index(text, "row-")+5]
	r.mu.Lock()
	r.log = append(r.log, fmt.Sprintf("%s/%d", row, strings.Count(text, `"letter"`)))
	r.mu.Unlock()
	return r.scripted.NextToken(ctx, prompt, ids)
}

// TestKnockoutRowsFinishInOrder: rows decided together finish in the order they were asked.
// A knockout row's final pass is asked only once its group passes are decoded; the scheduler
// serves it before newer rows' passes, so row i's final pass is decoded before row i+2 starts.
// (Before, every row's group passes went first and all the final passes came at the end: a
// batch run killed then lost every row of its window.)
func TestKnockoutRowsFinishInOrder(t *testing.T) {
	rt := &recording{scripted: &scripted{Scores: map[string]float64{}}}
	d, err := gojev.New(context.Background(), rt, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}})
	require.NoError(t, err)
	defer d.Close()
	rt.mu.Lock()
	rt.log = nil // the start-up checks' prompts
	rt.mu.Unlock()
	var rows []contract.Row
	for i := range 5 {
		rows = append(rows, contract.Row{ID: strconv.Itoa(i), State: fmt.Sprintf("row-%d", i), Question: "q", Options: manyOptions(40)})
	}
	outs, err := d.DecideAll(context.Background(), rows)
	require.NoError(t, err)
	for _, o := range outs {
		require.NoError(t, o.Err)
		require.Len(t, o.Result.Knockout.Passes, 4, "3 groups of 13-14 and a final pass of 15")
	}
	first, final := map[string]int{}, map[string]int{}
	for i, e := range rt.log {
		row, n, _ := strings.Cut(e, "/")
		if _, ok := first[row]; !ok {
			first[row] = i
		}
		if n == "15" {
			final[row] = i
		}
	}
	require.Len(t, final, 5, "decodes: %v", rt.log)
	for i := range 3 {
		assert.Less(t, final[fmt.Sprintf("row-%d", i)], first[fmt.Sprintf("row-%d", i+2)], "row %d's final pass before row %d starts: %v", i, i+2, rt.log)
	}
}

// TestManyOptionsDefault: with the zero Options a row of more than 16 options is decided by
// shortlist on a runtime that reads hidden states (Open's), and under the binary contract on
// one that does not; Decider.Options says which. ManyBinary decides such a row exactly as a
// Binary Decider does, one yes/no prompt per option; rows of 16 stay direct. A runtime that
// cannot spell yes and no fails only such rows, with the binary contract's start-up error.
func TestManyOptionsDefault(t *testing.T) {
	ctx := context.Background()
	row := contract.Row{ID: "n17", State: map[string]any{"message": "My card does not work abroad."}, Question: "Which option?", Options: manyOptions(17), Label: "o07"}
	d := openDefault(t, gojev.Options{})
	assert.Equal(t, gojev.ManyShortlist, d.Options().Knockout.Method)
	res, err := d.Decide(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, contract.BinaryPromptVersion, res.PromptVersion)
	require.NotNil(t, res.Shortlist, "the default on an in-process runtime")
	assert.Len(t, res.Candidates, gojev.DefaultShortlist)
	assert.Nil(t, res.Debias, "the direct contract's bias control does not apply")
	b := openDefault(t, gojev.Options{Contract: gojev.Binary})
	ps, err := d.Render(ctx, row)
	require.NoError(t, err)
	want, err := b.Render(ctx, row)
	require.NoError(t, err)
	require.Len(t, ps, 17, "Render: the binary prompt of every option, of which the shortlist decides the kept")
	for i := range want {
		assert.Equal(t, want[i].Text, ps[i].Text)
	}

	d = openDefault(t, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyBinary}})
	res, err = d.Decide(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, contract.BinaryPromptVersion, res.PromptVersion)
	assert.Nil(t, res.Knockout)
	assert.Nil(t, res.Shortlist)
	require.Len(t, res.Candidates, 17)
	all, err := b.Decide(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, all.Chosen, res.Chosen)
	for i := range all.Candidates {
		assert.Equal(t, all.Candidates[i].PromptSHA256, res.Candidates[i].PromptSHA256)
		assert.InDelta(t, all.Candidates[i].PYes, res.Candidates[i].PYes, 1e-6)
	}
	sixteen := row
	sixteen.Options = row.Options[:16]
	res, err = d.Decide(ctx, sixteen)
	require.NoError(t, err)
	assert.Equal(t, contract.PromptVersion, res.PromptVersion)

	// A runtime that reads no hidden states (an HTTP server) settles the default to binary.
	s, err := gojev.New(ctx, struct{ backend.Backend }{&scripted{}}, gojev.Options{})
	require.NoError(t, err, "a runtime without yes/no tokens still serves the direct contract")
	defer s.Close()
	assert.Equal(t, gojev.ManyBinary, s.Options().Knockout.Method)
	_, err = s.Decide(ctx, row)
	assert.ErrorIs(t, err, contract.ErrBinarySlot)
	_, err = s.Decide(ctx, sixteen)
	assert.NoError(t, err)
}
