package gojev_test

import (
	"context"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// TestBinaryMatchesOnePromptAtATime compares binary decisions on real 16-option rows with each
// candidate prompt decoded whole, alone (backend.InProcess without prefix reuse): the same
// prompt hashes, p_yes and every yes/no log-probability within 1e-4, the same choice, while the
// engine decodes each row's shared prefix once.
func TestBinaryMatchesOnePromptAtATime(t *testing.T) {
	rows := readRows(t, "banking77/test-16opt.jsonl", 2)
	ctx := context.Background()
	ref, err := backend.OpenInProcess(modelPath(t), backend.InProcessOptions{NThreads: 2, NoPrefixReuse: true})
	require.NoError(t, err)
	defer ref.Close()
	slots, err := contract.ResolveBinarySlots(backend.Tokenizer(ctx, ref))
	require.NoError(t, err)

	e := openEngine(t, gojev.Options{Contract: gojev.Binary})
	got := decideAll(t, e, rows)
	maxDelta, same := 0.0, 0
	for i, row := range rows {
		evidence, err := contract.EvidenceJSON(row.State)
		require.NoError(t, err)
		cands := make([]contract.CandidateScore, len(row.Options))
		for k, opt := range row.Options {
			text, err := ref.Render(ctx, contract.BinaryMessages(evidence, row.Question, opt))
			require.NoError(t, err)
			toks, err := ref.Tokenize(ctx, text, true)
			require.NoError(t, err)
			logits, err := ref.Logits(ctx, toks)
			require.NoError(t, err)
			cands[k] = contract.CandidateScore{ID: opt.ID, PromptSHA256: contract.PromptSHA256(text), BinaryScore: contract.ScoreBinary(logits, slots)}
		}
		chosen := contract.RankCandidates(cands)
		g := got[i]
		require.Len(t, g.Candidates, len(cands))
		for k, c := range cands {
			gc := g.Candidates[k]
			assert.Equal(t, c.PromptSHA256, gc.PromptSHA256)
			assert.Equal(t, c.Rank, gc.Rank)
			maxDelta = max(maxDelta, math.Abs(c.PYes-gc.PYes))
			for j := range c.Yes {
				maxDelta = max(maxDelta, math.Abs(c.Yes[j].Logprob-gc.Yes[j].Logprob))
			}
			for j := range c.No {
				maxDelta = max(maxDelta, math.Abs(c.No[j].Logprob-gc.No[j].Logprob))
			}
		}
		if g.Chosen == cands[chosen].ID {
			same++
		}
		assert.Less(t, g.Stats.DecodedTokens, float64(g.Stats.PromptTokens)/2, "row %d: the prefix is decoded once for its candidates", i)
	}
	t.Logf("binary, %d rows × 16 candidates: max |Δ| of p_yes and yes/no logprobs vs one prompt at a time = %.3g; same choice %d/%d", len(rows), maxDelta, same, len(rows))
	logStats(t, e, got)
	assert.LessOrEqual(t, maxDelta, 1e-4)
	assert.Equal(t, len(rows), same)
}
