package gojev_test

import (
	"context"
	"math"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/app/bench"
	"github.com/gojev/gojev/internal/testenv"
)

func modelPath(t testing.TB) string { return testenv.SmallModel(t) }

func openEngine(t testing.TB, opts gojev.Options) *gojev.Decider {
	t.Helper()
	if opts.Runtime.NThreads == 0 {
		opts.Runtime.NThreads = 2
	}
	e, err := gojev.Open(context.Background(), modelPath(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func decideAll(t testing.TB, e *gojev.Decider, rows []contract.Row) []*gojev.Result {
	t.Helper()
	outs, err := e.DecideAll(context.Background(), rows)
	require.NoError(t, err)
	res := make([]*gojev.Result, len(outs))
	for i, o := range outs {
		require.NoError(t, o.Err, "row %d", i)
		res[i] = o.Result
	}
	return res
}

func logStats(t *testing.T, e *gojev.Decider, res []*gojev.Result) {
	t.Helper()
	st := e.Stats()
	t.Logf("rows %d, prompts %d, prompt tokens %d, decoded %d (%.1f%%), decodes %d, rounds %d",
		st.Rows, st.Prompts, st.PromptTokens, st.DecodedTokens, 100*float64(st.DecodedTokens)/float64(st.PromptTokens), st.Decodes, st.Rounds)
	sum := 0.0
	for _, r := range res {
		sum += r.Stats.DecodedTokens
	}
	assert.InDelta(t, float64(st.DecodedTokens), sum, 1e-6, "per-row decoded tokens add up to the total")
}

// TestDirectMatchesOneAtATime compares a Decider deciding real rows concurrently from several
// goroutines (prompts batched into rounds, shared prefixes decoded once) with one deciding
// them one at a time, every prompt decoded whole (NoPrefixReuse, jev bench's baseline): the same prompts, every option's
// log-probability within 1e-4 (measured: bit-identical) and the same choice on every row, while
// the shared prefix is decoded once.
func TestDirectMatchesOneAtATime(t *testing.T) {
	rows := readRows(t, "banking77/sample-200-8opt.jsonl", 24)
	d, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2, NoPrefixReuse: true}})
	require.NoError(t, err)
	defer d.Close()
	want := make([]*gojev.Result, len(rows))
	for i, row := range rows {
		want[i], err = d.Decide(context.Background(), row)
		require.NoError(t, err)
	}
	e := openEngine(t, gojev.Options{})
	got := make([]*gojev.Result, len(rows))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < len(rows); i += 4 {
				r, err := e.Decide(context.Background(), rows[i])
				assert.NoError(t, err)
				got[i] = r
			}
		})
	}
	wg.Wait()
	maxDelta, sameChoice := 0.0, 0
	for i := range rows {
		w, g := want[i], got[i]
		require.NotNil(t, g)
		assert.Equal(t, contract.PromptVersion, g.PromptVersion)
		assert.Equal(t, string(rows[i].IDJSON()), string(g.ID), "results in input order")
		assert.Equal(t, w.PromptSHA256, g.PromptSHA256, "row %d", i)
		assert.Equal(t, w.NPromptTokens, g.NPromptTokens)
		require.Len(t, g.Options, len(w.Options))
		for k := range w.Options {
			assert.Equal(t, w.Options[k].ID, g.Options[k].ID)
			assert.Equal(t, w.Options[k].Token, g.Options[k].Token)
			maxDelta = max(maxDelta, math.Abs(w.Options[k].Logprob-g.Options[k].Logprob))
		}
		if w.Chosen == g.Chosen {
			sameChoice++
		}
		assert.LessOrEqual(t, g.Stats.DecodedTokens, float64(g.Stats.PromptTokens), "row %d", i)
	}
	t.Logf("direct, %d rows from 4 goroutines: max |Δ logprob| vs one at a time = %.3g; same choice on %d/%d", len(rows), maxDelta, sameChoice, len(rows))
	logStats(t, e, got)
	st := e.Stats()
	assert.Less(t, st.DecodedTokens, st.PromptTokens*9/10, "the shared prefix is decoded once")
	assert.LessOrEqual(t, maxDelta, 1e-4)
	assert.Equal(t, len(rows), sameChoice)
}

func readRows(t testing.TB, rel string, limit int) []contract.Row {
	return testenv.Rows(t, testenv.SharedData(t, rel), limit)
}

// TestBitIdenticalOnTheDefaultModel decides the 12 example tickets with the default model
// (Qwen2.5-Coder-1.5B Q4_K_M, whose Q4_K weights llama.cpp repacks for 4-row gemm on AVX2) all
// at once, reusing shared prefixes in trie order, and compares every option's log-probability
// with decoding each prompt alone from an empty cache: equal bit for bit, because batches are
// aligned to absolute positions (backend.Align). Without the alignment they differed by up
// to 0.147.
func TestBitIdenticalOnTheDefaultModel(t *testing.T) {
	model := testenv.DefaultModel(t)
	rows := testenv.Rows(t, filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl"), 12)
	alone, err := backend.OpenInProcess(model, backend.InProcessOptions{NoPrefixReuse: true, NThreads: 2})
	require.NoError(t, err)
	defer alone.Close()
	d, err := gojev.New(context.Background(), alone, gojev.Options{})
	require.NoError(t, err)
	e, err := gojev.Open(context.Background(), model, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	require.NoError(t, err)
	defer e.Close()
	got := decideAll(t, e, rows)
	maxDelta := 0.0
	for i, row := range rows {
		want, err := d.Decide(context.Background(), row)
		require.NoError(t, err)
		require.Equal(t, want.PromptSHA256, got[i].PromptSHA256)
		for k := range want.Options {
			maxDelta = max(maxDelta, math.Abs(want.Options[k].Logprob-got[i].Options[k].Logprob))
		}
	}
	st := e.Stats()
	t.Logf("default model, 12 rows: max |Δ logprob| engine vs each prompt alone = %g; decoded %d of %d prompt tokens", maxDelta, st.DecodedTokens, st.PromptTokens)
	assert.Equal(t, 0.0, maxDelta)
	assert.Less(t, st.DecodedTokens, st.PromptTokens, "the shared prefix is decoded once")
}

// packedBoundCPU bounds |Δ logprob| between packed and one-sequence decoding on the CPU
// backend (measured on SmolLM2-135M: 0.114 on the 12 example tickets; 0.21 in the first
// packed engine): a packed batch multiplies more rows at once, through other kernels.
const packedBoundCPU = 0.5

// TestPackedDecodingAgainstOneSequence decides the same rows with one sequence per
// llama_decode (the CPU default, exact) and packed, under both contracts: every result records
// its mode, the prompts are the same, the choices are the same, and the log-probabilities
// agree within packedBoundCPU.
func TestPackedDecodingAgainstOneSequence(t *testing.T) {
	rows := exampleRows(t)
	for _, c := range []struct {
		contract gojev.Contract
		rows     []contract.Row
	}{{gojev.Direct, rows[:8]}, {gojev.Binary, rows[:2]}} {
		t.Run(c.contract.String(), func(t *testing.T) {
			one := decideAll(t, openEngine(t, gojev.Options{Contract: c.contract}), c.rows)
			packed := decideAll(t, openEngine(t, gojev.Options{Contract: c.contract, Runtime: backend.InProcessOptions{Decode: backend.DecodePacked, PackSeqs: 4}}), c.rows)
			for i := range one {
				assert.Equal(t, backend.DecodeOneSequence, one[i].Decode, "the CPU default")
				assert.Equal(t, backend.DecodePacked, packed[i].Decode)
				assert.Equal(t, one[i].PromptSHA256, packed[i].PromptSHA256)
				for k := range one[i].Candidates {
					assert.Equal(t, one[i].Candidates[k].PromptSHA256, packed[i].Candidates[k].PromptSHA256)
				}
			}
			delta, same := bench.Agreement(one, packed)
			t.Logf("%s, %d rows: packed vs one-sequence max |Δ logprob| %.3g, same choices %d", c.contract, len(c.rows), delta, same)
			assert.Equal(t, len(c.rows), same, "the same choices")
			assert.LessOrEqual(t, delta, packedBoundCPU)
			assert.Greater(t, delta, 0.0, "packed batches run through other kernels; a zero Δ means nothing was packed")
		})
	}
}
