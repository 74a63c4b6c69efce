package gojev_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/testenv"
)

// positionLogprobs are a raw result's log-probabilities over its listed options, by position.
func positionLogprobs(r *gojev.Result) []float64 {
	lp := make([]float64, len(r.Options))
	for i, o := range r.Options {
		lp[i] = o.Logprob
	}
	return debias.LogSoftmax(lp)
}

// TestCyclicPermutationsMapBack decides rows under --permute cyclic and checks the bookkeeping
// against deciding each permuted row alone: every shift's prompt is that permuted row's prompt
// (same prompt_sha256, same log-probabilities, bit for bit), option ids map back to the row's
// own order, and the averaged scores are debias.AverageCyclic of those readouts.
func TestCyclicPermutationsMapBack(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 3)
	raw := openEngine(t, gojev.Options{})
	cyc := openEngine(t, gojev.Options{Debias: debias.Cyclic})
	got := decideAll(t, cyc, rows)
	for i, row := range rows {
		res := got[i]
		k := len(row.Options)
		require.NotNil(t, res.Debias)
		assert.Equal(t, debias.Cyclic, res.Debias.Method)
		require.Len(t, res.Debias.Permutations, k-1)

		alone := make([][]float64, k)
		hashes := map[string]bool{}
		for s := range k {
			p := row
			p.Options = debias.Permute(row.Options, s)
			r, err := raw.Decide(context.Background(), p)
			require.NoError(t, err)
			alone[s] = positionLogprobs(r)
			hashes[r.PromptSHA256] = true
			// Position i of shift s shows option (i+s) mod k.
			for pos, o := range r.Options {
				assert.Equal(t, row.Options[(pos+s)%k].ID, o.ID, "row %d shift %d position %d", i, s, pos)
			}
			if s == 0 {
				assert.Equal(t, r.PromptSHA256, res.PromptSHA256)
				assert.Equal(t, r.Chosen, res.Debias.RawChosen)
				continue
			}
			perm := res.Debias.Permutations[s-1]
			assert.Equal(t, s, perm.Shift)
			assert.Equal(t, r.PromptSHA256, perm.PromptSHA256)
			assert.Equal(t, alone[s], perm.Logprobs, "shift %d decided with the others = alone", s)
		}
		assert.Len(t, hashes, k, "k distinct prompts")
		scores, probs, err := debias.AverageCyclic(alone)
		require.NoError(t, err)
		assert.InDeltaSlice(t, scores, res.Debias.Scores, 1e-12)
		assert.InDeltaSlice(t, probs, res.Debias.Probabilities, 1e-12)
		best := 0
		for o := range probs {
			if probs[o] > probs[best] {
				best = o
			}
		}
		assert.Equal(t, row.Options[best].ID, res.Chosen)
		assert.Equal(t, contract.Letters[best:best+1], res.ChosenLetter)
		assert.InDelta(t, probs[best], res.Probability, 1e-12)
		assert.Equal(t, res.Chosen == row.Label, *res.Correct)
		assert.Equal(t, res.Debias.RawChosen == row.Label, *res.Debias.RawCorrect)
		// The raw fields stay: the row's own order, as deciding it without bias control.
		assert.Equal(t, alone[0], positionLogprobs(res))
	}
}

// TestPriDeEstimateThenDebias estimates a prior from real rows and checks that a row decided
// under it is debias.ApplyPrior of the raw decision, and that the sample rows come back
// decided from their permutations.
func TestPriDeEstimateThenDebias(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 6)
	e := openEngine(t, gojev.Options{Debias: debias.PriDe})
	_, err := e.Decide(context.Background(), rows[5])
	require.ErrorIs(t, err, debias.ErrNoPrior, "no prior yet")

	var progress [][2]int
	ctx := gojev.WithPriorProgress(context.Background(), func(done, total int) { progress = append(progress, [2]int{done, total}) })
	prior, outs, err := e.EstimatePrior(ctx, rows[:3])
	require.NoError(t, err)
	assert.Equal(t, [][2]int{{8, 24}, {16, 24}, {24, 24}}, progress, "each row's 8 permutations, as it is done")
	p8, ok := prior.For(8)
	require.True(t, ok)
	assert.Equal(t, 3, prior.ByOptions[8].SampleRows)
	assert.InDelta(t, 1.0, sum(p8), 1e-9)
	for i, o := range outs {
		require.NoError(t, o.Err)
		assert.True(t, o.Result.Debias.PriorSample, "row %d", i)
		assert.Equal(t, debias.PriDe, o.Result.Debias.Method)
		assert.Len(t, o.Result.Debias.Permutations, 7)
		assert.Equal(t, p8, o.Result.Debias.Prior)
	}
	// The prior is the mean of the rows' own priors from their permutations.
	var rowPriors [][]float64
	for _, o := range outs {
		perms := [][]float64{positionLogprobs(o.Result)}
		for _, p := range o.Result.Debias.Permutations {
			perms = append(perms, p.Logprobs)
		}
		rp, err := debias.EstimateRowPrior(perms)
		require.NoError(t, err)
		rowPriors = append(rowPriors, rp)
	}
	want, err := debias.AveragePriors(rowPriors)
	require.NoError(t, err)
	assert.InDeltaSlice(t, want, p8, 1e-12)

	e.SetPrior(prior)
	raw := openEngine(t, gojev.Options{})
	for _, row := range rows[3:] {
		got, err := e.Decide(context.Background(), row)
		require.NoError(t, err)
		r, err := raw.Decide(context.Background(), row)
		require.NoError(t, err)
		_, probs, err := debias.ApplyPrior(positionLogprobs(r), p8)
		require.NoError(t, err)
		assert.Equal(t, probs, got.Debias.Probabilities)
		assert.Equal(t, p8, got.Debias.Prior)
		assert.False(t, got.Debias.PriorSample)
		assert.Equal(t, r.Chosen, got.Debias.RawChosen)
		assert.Equal(t, r.PromptSHA256, got.PromptSHA256, "PriDe never changes the prompt")
		for k := range r.Options {
			assert.Equal(t, r.Options[k].Probability, got.Options[k].Probability, "the raw probability is kept")
		}
	}
	// A row with another option count has no prior.
	four := rows[4]
	four.Options, four.Label = four.Options[:4], ""
	_, err = e.Decide(context.Background(), four)
	assert.ErrorIs(t, err, debias.ErrNoPrior)
}

// TestContextualCalibration decides a binary row under --debias contextual: every candidate's
// calibrated p_yes is debias.Calibrate of its raw p_yes with the mean p_yes of its three
// content-free prompts, and those are cached for the next row with the same question.
func TestContextualCalibration(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 2)
	for i := range rows {
		rows[i].Options = rows[i].Options[:3]
		rows[i].Label = ""
	}
	e := openEngine(t, gojev.Options{Contract: gojev.Binary, Debias: debias.Contextual})
	res, err := e.Decide(context.Background(), rows[0])
	require.NoError(t, err)
	require.NotNil(t, res.Debias)
	require.Len(t, res.Debias.ContentFree, 3)
	for i, c := range res.Candidates {
		q, ok := debias.Calibrate(c.PYes, []float64{res.Debias.ContentFree[i]})
		require.True(t, ok)
		assert.InDelta(t, q, res.Debias.Probabilities[i], 1e-12)
	}
	before := e.Stats().Prompts
	again, err := e.Decide(context.Background(), rows[0])
	require.NoError(t, err)
	assert.Equal(t, int64(3), e.Stats().Prompts-before, "content-free p_yes cached: only the row's own prompts")
	assert.Equal(t, res.Debias.Probabilities, again.Debias.Probabilities)

	_, err = gojev.Open(context.Background(), modelPath(t), gojev.Options{Contract: gojev.Direct, Debias: debias.Contextual})
	assert.ErrorIs(t, err, gojev.ErrOptions)
}

// TestHandBuiltRowsAreValidated: a row built in Go gets ParseRow's checks.
func TestHandBuiltRowsAreValidated(t *testing.T) {
	e := openEngine(t, gojev.Options{})
	row := contract.Row{ID: "x", State: "s", Question: "q",
		Options: []contract.Option{{ID: "a"}, {ID: "a"}}}
	_, err := e.Decide(context.Background(), row)
	assert.ErrorIs(t, err, contract.ErrRow)
	row.Options[1].ID, row.Label = "b", "c"
	_, err = e.Decide(context.Background(), row)
	assert.ErrorIs(t, err, contract.ErrRow)
}

func sum(v []float64) float64 {
	t := 0.0
	for _, x := range v {
		t += x
	}
	if math.IsNaN(t) {
		return 0
	}
	return t
}

// TestOpenReadsTheStoredPrior: with the zero Options, Open reads the prior the store keeps for
// the model (debias.DefaultStore), and a row of an option count it holds is decided under
// PriDe, exactly as with that prior given; a row of another count is decided raw, as under
// debias.None, which ignores the store.
func TestOpenReadsTheStoredPrior(t *testing.T) {
	t.Setenv("GOJEV_PRIORS", t.TempDir())
	model := testenv.SmallModel(t)
	id, err := gojev.ModelIdentity(model, "")
	require.NoError(t, err)
	stored := &debias.Prior{Method: debias.PriDe, Reference: debias.Reference, PromptVersion: contract.PromptVersion, Model: id,
		ByOptions: map[int]debias.LetterPrior{5: {Letters: "ABCDE", Prior: []float64{0.1, 0.4, 0.2, 0.2, 0.1}, SampleRows: 10}}}
	require.NoError(t, debias.DefaultStore().Add(stored))

	rows := exampleRows(t)[:2]
	require.Len(t, rows[0].Options, 5)
	three := rows[1]
	three.Options = three.Options[:3]
	three.Label = ""
	d := openDefault(t, gojev.Options{})
	require.NotNil(t, d.Prior())
	assert.Equal(t, stored.ByOptions, d.Prior().ByOptions)
	given := openDefault(t, gojev.Options{Debias: debias.PriDe, Prior: stored})
	raw := openDefault(t, gojev.Options{Debias: debias.None})
	assert.Nil(t, raw.Prior(), "debias.None reads no store")

	ctx := context.Background()
	res, err := d.Decide(ctx, rows[0])
	require.NoError(t, err)
	require.NotNil(t, res.Debias)
	want, err := given.Decide(ctx, rows[0])
	require.NoError(t, err)
	assert.Equal(t, want.Debias.Scores, res.Debias.Scores)
	assert.Equal(t, want.Chosen, res.Chosen)

	res, err = d.Decide(ctx, three)
	require.NoError(t, err)
	assert.Nil(t, res.Debias, "no prior for 3 options: the raw scores")
	want, err = raw.Decide(ctx, three)
	require.NoError(t, err)
	assert.Equal(t, want.Options, res.Options)
	// gojev ships no calibration for the small model: under the defaults a result says so,
	// and under settings of the caller's it does not.
	assert.True(t, res.Uncalibrated)
	assert.Nil(t, res.Calibration)
	assert.False(t, want.Uncalibrated)
}
