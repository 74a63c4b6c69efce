package gojev_test

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
)

// shortlistRuntime scripts 18 options on a circle (option i at angle 2πi/18, so their mean is
// the origin) and states at the given angles; the final pass favours "Option 1." by 2 nats.
func shortlistRuntime(states map[string]float64) (*scripted, []contract.Option) {
	opts := manyOptions(18)
	rt := &scripted{Scores: map[string]float64{opts[1].Description: 2}, Embeddings: map[string][]float32{}}
	for i, o := range opts {
		a := 2 * math.Pi * float64(i) / 18
		rt.Embeddings[o.Description] = []float32{float32(math.Cos(a)), float32(math.Sin(a))}
	}
	for s, a := range states {
		rt.Embeddings[s] = []float32{float32(math.Cos(a)), float32(math.Sin(a))}
	}
	return rt, opts
}

// A shortlist on the small model: the rerank reads the ranker's 16 best options, the final
// pass the 4 of highest p_yes among them, the distribution covers every option and sums to 1,
// and the options' embeddings are read once for every row asked at once: 18 option texts,
// then per row its state, 16 binary prompts and one final pass.
func TestShortlistOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	opts := manyOptions(18)
	p := profileOf("shortlist", calibrate.Map{Method: calibrate.Temperature, T: 2})
	p.Scorings["pride+shortlist"] = p.Scorings["shortlist"]
	d := openDefault(t, gojev.Options{Calibration: p, Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
	var calls []*gojev.Call
	for _, s := range []string{"my card was charged twice", "how do I top up", "I forgot my PIN"} {
		c, err := d.Begin(ctx, contract.Row{ID: s, State: map[string]any{"message": s}, Question: "Which option?", Options: opts, Label: opts[3].ID})
		require.NoError(t, err)
		calls = append(calls, c)
	}
	for _, c := range calls {
		res, err := c.Wait(ctx)
		require.NoError(t, err)
		sl := res.Shortlist
		require.NotNil(t, sl)
		scores := make([]float64, len(sl.Scores))
		for i, s := range sl.Scores {
			scores[i] = s.Score
		}
		require.Len(t, sl.Reranked, gojev.ShortlistRerank)
		ranked := map[string]bool{}
		for _, o := range sl.Reranked {
			ranked[o.ID] = true
		}
		for _, s := range sl.Scores { // no option outside the rerank scores above one in it
			if !ranked[s.ID] {
				for _, o := range sl.Reranked {
					assert.GreaterOrEqual(t, scores[idIndex(opts, o.ID)], s.Score)
				}
			}
		}
		require.Len(t, sl.Kept, gojev.DefaultShortlist)
		for _, o := range sl.Reranked { // every kept option has a p_yes at least any other's
			for _, k := range sl.Kept {
				if !slices.Contains(sl.Kept, o.ID) {
					assert.GreaterOrEqual(t, pYes(sl, k), o.PYes)
				}
			}
		}
		assert.Len(t, res.Options, gojev.DefaultShortlist, "the final pass is a direct row of the kept options")
		assert.Equal(t, contract.PromptVersion, res.PromptVersion)
		assert.Equal(t, contract.BinaryPromptVersion, sl.RerankPromptVersion)
		var sum float64
		for _, o := range sl.Distribution {
			sum += o.Probability
		}
		assert.InDelta(t, 1, sum, 1e-9)
		assert.Contains(t, sl.Kept, res.Chosen)
		require.NotNil(t, res.Calibration, "its distribution is what the profile calibrates")
		assert.Equal(t, "shortlist", res.CalibrationScoring())
		assert.Len(t, res.Calibration.Probabilities, 18)
	}
	assert.Equal(t, int64(18+3*(1+16+1)), d.Stats().Prompts)
}

func idIndex(opts []contract.Option, id string) int {
	return slices.IndexFunc(opts, func(o contract.Option) bool { return o.ID == id })
}

func pYes(sl *gojev.Shortlist, id string) float64 {
	i := slices.IndexFunc(sl.Reranked, func(o gojev.RerankedOption) bool { return o.ID == id })
	return sl.Reranked[i].PYes
}

// A runtime that reads no hidden states refuses shortlist rows, with ErrOptions.
func TestShortlistNeedsAnEmbedder(t *testing.T) {
	ctx := context.Background()
	rt, opts := shortlistRuntime(nil)
	d, err := gojev.New(ctx, struct{ backend.Backend }{rt}, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
	require.NoError(t, err)
	defer d.Close()
	_, err = d.Decide(ctx, contract.Row{ID: "r", State: "s", Question: "q", Options: opts})
	assert.ErrorIs(t, err, gojev.ErrOptions)
	_, err = gojev.New(ctx, rt, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist, Shortlist: 17}})
	assert.ErrorIs(t, err, gojev.ErrOptions)
}

// The in-process runtime's hidden state is read as its logits are: the same floats whether the
// prompt's prefix came from the KV cache or was decoded with it, and the logits of the prompt
// decoded next are unchanged by embeddings having been on (small model: n_embd 576).
func TestEmbeddingsAreExactUnderPrefixReuse(t *testing.T) {
	ctx := context.Background()
	alone, err := backend.OpenInProcess(modelPath(t), backend.InProcessOptions{NThreads: 2, NoPrefixReuse: true})
	require.NoError(t, err)
	defer alone.Close()
	reuse, err := backend.OpenInProcess(modelPath(t), backend.InProcessOptions{NThreads: 2})
	require.NoError(t, err)
	defer reuse.Close()
	tok := func(s string) []int32 {
		ts, err := alone.Tokenize(ctx, s, false)
		require.NoError(t, err)
		return ts
	}
	a, b := tok(`This sentence : "my card has not arrived" means in one word:"`), tok(`This sentence : "I was charged twice" means in one word:"`)
	want, n, err := alone.Embed(ctx, b)
	require.NoError(t, err)
	assert.Len(t, want, 576)
	assert.Equal(t, len(b), n)
	_, _, err = reuse.Embed(ctx, a)
	require.NoError(t, err)
	got, n, err := reuse.Embed(ctx, b)
	require.NoError(t, err)
	assert.Less(t, n, len(b), "the shared prefix came from the cache")
	assert.Equal(t, want, got)
	other, _, err := alone.Embed(ctx, a)
	require.NoError(t, err)
	assert.NotEqual(t, want, other)

	ids := []int32{1, 2, 3}
	wantLogits, err := alone.NextToken(ctx, a, ids)
	require.NoError(t, err)
	gotLogits, err := reuse.NextToken(ctx, a, ids) // after an embedding read with embeddings on
	require.NoError(t, err)
	assert.Equal(t, wantLogits.Logits, gotLogits.Logits)
}

