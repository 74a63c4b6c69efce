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

// A shortlist on the small model: the binary contract decides the ranker's 16 best options
// (no option outside them scores above one in them), the distribution covers every option
// and sums to 1, a profile calibrates it, and the options' embeddings are read once for every
// row asked at once: 18 option texts, then per row its state and 16 binary prompts.
func TestShortlistOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	opts := manyOptions(18)
	d := openDefault(t, gojev.Options{Calibration: profileOf("shortlist", calibrate.Map{Method: calibrate.Temperature, T: 2}),
		Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
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
		require.Len(t, sl.Kept, gojev.DefaultShortlist)
		for _, s := range sl.Scores {
			if !slices.Contains(sl.Kept, s.ID) {
				for _, id := range sl.Kept {
					assert.GreaterOrEqual(t, sl.Scores[idIndex(opts, id)].Score, s.Score)
				}
			}
		}
		assert.Equal(t, contract.BinaryPromptVersion, res.PromptVersion)
		require.Len(t, res.Candidates, gojev.DefaultShortlist)
		var sum, chosen, most float64
		for _, o := range sl.Distribution {
			sum += o.Probability
			if o.ID == res.Chosen {
				chosen = o.Probability
			}
			most = max(most, o.Probability)
		}
		assert.Equal(t, most, chosen, "the choice is the distribution's argmax (ranker times binary)")
		assert.Equal(t, gojev.ShortlistRule, sl.Rule)
		assert.InDelta(t, 1, sum, 1e-9)
		require.NotNil(t, res.Calibration, "its distribution is what the profile calibrates")
		assert.Equal(t, "shortlist", res.CalibrationScoring())
		assert.Len(t, res.Calibration.Probabilities, 18)
	}
	assert.Equal(t, int64(18+3*(1+16)), d.Stats().Prompts)

	// What a request of such a question costs before it is prepared: the state's embedding and
	// 16 binary prompts, whose user messages are the binary contract's.
	crit := make([]gojev.Criterion, len(opts))
	for i, o := range opts {
		crit[i] = gojev.Criterion{Name: o.ID, Description: o.Description}
	}
	q := gojev.Choice{Instructions: "Which option?", Criteria: crit}
	assert.Equal(t, 1+gojev.DefaultShortlist, d.Prompts(q))
	msgs, err := d.UserMessages(map[string]any{"message": "hi"}, q)
	require.NoError(t, err)
	require.Len(t, msgs, gojev.DefaultShortlist)
	assert.Contains(t, msgs[0], opts[0].Description, "one binary prompt per option")
	assert.NotContains(t, msgs[0], opts[1].Description)
}

func idIndex(opts []contract.Option, id string) int {
	return slices.IndexFunc(opts, func(o contract.Option) bool { return o.ID == id })
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

// Under packed decoding (the GPU default) the texts read for their hidden state are still
// decoded one at a time: the ranking equals one-sequence decoding's to the bit (the binary
// readings after it differ within the packed bound, TestPackedDecodingAgainstOneSequence).
func TestShortlistRanksAlikeWhenPacked(t *testing.T) {
	ctx := context.Background()
	row := contract.Row{ID: "r", State: "my card was charged twice", Question: "Which option?", Options: manyOptions(18)}
	one := openDefault(t, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
	packed := openDefault(t, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist},
		Runtime: backend.InProcessOptions{Decode: backend.DecodePacked}})
	a, err := one.Decide(ctx, row)
	require.NoError(t, err)
	b, err := packed.Decide(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, "packed", b.Decode)
	assert.Equal(t, a.Shortlist.Scores, b.Shortlist.Scores)
	assert.Equal(t, a.Shortlist.Kept, b.Shortlist.Kept)
}
