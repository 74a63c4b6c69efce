package gojev_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
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

// A shortlist ranks every option by the cosine of its embedding with the state's (centred by
// the options' mean: here the origin, so the cosine of their angles), keeps the best K in row
// order, decides them in one direct pass and spreads the ranker's softmax(score/τ) over the
// rest: each figure below is recomputed here from the angles.
func TestShortlistKeepsTheNearestOptions(t *testing.T) {
	ctx := context.Background()
	rt, opts := shortlistRuntime(map[string]float64{"near one": 0.3, "far side": math.Pi})
	d, err := gojev.New(ctx, rt, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist, Shortlist: 4}})
	require.NoError(t, err)
	defer d.Close()
	res, err := d.Decide(ctx, contract.Row{ID: "r", State: "near one", Question: "q", Options: opts, Label: opts[1].ID})
	require.NoError(t, err)
	sl := res.Shortlist
	require.NotNil(t, sl)
	// Angles 0, 20, 40 and 340 degrees are the four nearest to 0.3 rad (17 degrees).
	assert.Equal(t, []string{opts[0].ID, opts[1].ID, opts[2].ID, opts[17].ID}, sl.Kept)
	assert.Equal(t, 4, sl.K)
	assert.Len(t, res.Options, 4, "the final pass is a direct row of the kept options")
	z := make([]float64, 18)
	for i := range z {
		assert.InDelta(t, math.Cos(2*math.Pi*float64(i)/18-0.3), sl.Scores[i].Score, 1e-6, "option %d", i)
		z[i] = sl.Scores[i].Score / gojev.ShortlistTau
	}
	rank := debias.Softmax(z)
	mass := rank[0] + rank[1] + rank[2] + rank[17]
	assert.InDelta(t, mass, sl.KeptMass, 1e-12)
	final := debias.Softmax([]float64{0, 2, 0, 0})
	var sum float64
	for i, o := range sl.Distribution {
		want := rank[i]
		switch i {
		case 0, 1, 2:
			want = mass * final[i]
		case 17:
			want = mass * final[3]
		}
		assert.InDelta(t, want, o.Probability, 1e-9, "option %d", i)
		sum += o.Probability
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.Equal(t, opts[1].ID, res.Chosen)
	assert.Equal(t, "B", res.ChosenLetter)
	assert.InDelta(t, mass*final[1], res.Probability, 1e-9)
	require.NotNil(t, res.Correct)
	assert.True(t, *res.Correct)
	assert.Equal(t, contract.PromptVersion, res.PromptVersion, "the final pass is a seed-contract record")
	assert.Equal(t, int64(18+1+1), d.Stats().Prompts, "18 options and the state embedded, one final pass")

	// The options' embeddings are the Decider's: the next row reads only its state.
	res, err = d.Decide(ctx, contract.Row{ID: "r2", State: "far side", Question: "q", Options: opts})
	require.NoError(t, err)
	assert.Equal(t, []string{opts[7].ID, opts[8].ID, opts[9].ID, opts[10].ID}, res.Shortlist.Kept)
	assert.Equal(t, int64(18+2+2), d.Stats().Prompts)
	line, err := json.Marshal(res)
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(line, &rec))
	assert.Contains(t, rec["shortlist"], "kept_mass")
	assert.Equal(t, "raw", res.Shortlist.Scoring, "no prior on a scripted runtime: the final pass is raw")
	assert.Equal(t, "pride+shortlist", d.Options().Scoring(18), "what a profile is fitted for where a prior is at hand")
}

// Rows decided at once share their options' embeddings: each text is read once.
func TestShortlistReadsEachOptionOnce(t *testing.T) {
	ctx := context.Background()
	rt, opts := shortlistRuntime(map[string]float64{"a": 0.1, "b": 1.1, "c": 2.1})
	d, err := gojev.New(ctx, rt, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
	require.NoError(t, err)
	defer d.Close()
	var calls []*gojev.Call
	for _, s := range []string{"a", "b", "c"} {
		c, err := d.Begin(ctx, contract.Row{ID: s, State: s, Question: "q", Options: opts})
		require.NoError(t, err)
		calls = append(calls, c)
	}
	for _, c := range calls {
		res, err := c.Wait(ctx)
		require.NoError(t, err)
		assert.Len(t, res.Shortlist.Kept, gojev.DefaultShortlist)
	}
	assert.Equal(t, int64(18+3*2), d.Stats().Prompts)
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

// A shortlist's distribution over every option is what a profile's map calibrates (scoring
// "shortlist"): here a temperature of 2 over its log-probabilities.
func TestShortlistIsCalibratedOverEveryOption(t *testing.T) {
	ctx := context.Background()
	rt, opts := shortlistRuntime(map[string]float64{"near one": 0.3})
	m := calibrate.Map{Method: calibrate.Temperature, T: 2}
	p := profileOf("shortlist", m)
	p.Scorings["pride+shortlist"] = p.Scorings["shortlist"]
	d, err := gojev.New(ctx, rt, gojev.Options{Calibration: p, Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}})
	require.NoError(t, err)
	defer d.Close()
	res, err := d.Decide(ctx, contract.Row{ID: "r", State: "near one", Question: "q", Options: opts})
	require.NoError(t, err)
	require.NotNil(t, res.Calibration)
	lp := make([]float64, len(res.Shortlist.Distribution))
	for i, o := range res.Shortlist.Distribution {
		lp[i] = math.Log(o.Probability) / 2
	}
	assert.InDeltaSlice(t, debias.Softmax(lp), res.Calibration.Probabilities, 1e-9)
	assert.False(t, res.Uncalibrated)
	assert.Equal(t, "shortlist", res.CalibrationScoring())
}
