package gojev_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// chatML renders two messages as SmolLM2's ChatML template does, for hashes worked out
// without the renderer.
func chatML(system, user string) string {
	return "<|im_start|>system\n" + system + "<|im_end|>\n<|im_start|>user\n" + user + "<|im_end|>\n<|im_start|>assistant\n"
}

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestGuardedContractOnTheSmallModel: the guarded contract's prompt is the seed's with the
// guard sentence in the system text and nothing else; its results carry its own
// prompt_version, and PriDe applies to it as to the direct contract.
func TestGuardedContractOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	rows := exampleRows(t)[:3]
	direct := openDefault(t, gojev.Options{})
	guarded := openDefault(t, gojev.Options{Contract: gojev.Guarded})
	assert.Equal(t, contract.GuardedPromptVersion, guarded.Check().PromptVersion)
	for _, row := range rows {
		dp, err := direct.Render(ctx, row)
		require.NoError(t, err)
		gp, err := guarded.Render(ctx, row)
		require.NoError(t, err)
		require.NotEqual(t, dp[0].Text, gp[0].Text)
		assert.Equal(t, dp[0].Text, strings.Replace(gp[0].Text, contract.GuardSentence+" ", "", 1), "only the guard sentence differs")
		res, err := guarded.Decide(ctx, row)
		require.NoError(t, err)
		assert.Equal(t, contract.GuardedPromptVersion, res.PromptVersion)
		assert.Equal(t, gp[0].SHA256, res.PromptSHA256)
	}
	prior, _, err := guarded.EstimatePrior(ctx, rows)
	require.NoError(t, err)
	assert.Equal(t, contract.GuardedPromptVersion, prior.PromptVersion, "a guarded prior is the guarded contract's")
	pride := openDefault(t, gojev.Options{Contract: gojev.Guarded, Debias: debias.PriDe, Prior: prior})
	res, err := pride.Decide(ctx, rows[0])
	require.NoError(t, err)
	require.NotNil(t, res.Debias)
	assert.Equal(t, debias.PriDe, res.Debias.Method)
}

// TestSpotlightContractOnTheSmallModel: the spotlighted prompt is the seed's with the
// datamarking sentence in the system text and the evidence marked, nothing else; its results
// and its PriDe prior carry its own prompt_version.
func TestSpotlightContractOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	rows := exampleRows(t)[:3]
	direct := openDefault(t, gojev.Options{})
	spot := openDefault(t, gojev.Options{Contract: gojev.Spotlight})
	assert.Equal(t, contract.SpotlightPromptVersion, spot.Check().PromptVersion)
	for _, row := range rows {
		dp, err := direct.Render(ctx, row)
		require.NoError(t, err)
		sp, err := spot.Render(ctx, row)
		require.NoError(t, err)
		evidence, err := contract.EvidenceJSON(row.State)
		require.NoError(t, err)
		require.Contains(t, evidence, " ", "the example evidence has spaces to mark")
		require.Contains(t, sp[0].Text, contract.Datamark(evidence))
		unmarked := strings.Replace(strings.Replace(sp[0].Text, contract.SpotlightSentence+" ", "", 1), contract.Datamark(evidence), evidence, 1)
		assert.Equal(t, dp[0].Text, unmarked, "only the sentence and the evidence's marks differ")
		res, err := spot.Decide(ctx, row)
		require.NoError(t, err)
		assert.Equal(t, contract.SpotlightPromptVersion, res.PromptVersion)
		assert.Equal(t, sp[0].SHA256, res.PromptSHA256)
	}
	prior, _, err := spot.EstimatePrior(ctx, rows)
	require.NoError(t, err)
	assert.Equal(t, contract.SpotlightPromptVersion, prior.PromptVersion)
}

// TestDetectorOnTheSmallModel: Options.Detect adds the detector's readout without touching the
// decision; its prompt is the one worked out by hand (ChatML around the pinned messages), and
// AbstainOnSuspect abstains on exactly the flagged rows.
func TestDetectorOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	rows := exampleRows(t)[:4]
	plain := openDefault(t, gojev.Options{})
	det := openDefault(t, gojev.Options{Detect: true, AbstainOnSuspect: true, DetectThreshold: 0.55})
	for _, row := range rows {
		want, err := plain.Decide(ctx, row)
		require.NoError(t, err)
		got, err := det.Decide(ctx, row)
		require.NoError(t, err)
		assert.Equal(t, want.Options, got.Options, "the decision's readout is unchanged")
		assert.Equal(t, want.Chosen, got.Chosen)
		assert.Equal(t, want.PromptSHA256, got.PromptSHA256)
		s := got.Suspect
		require.NotNil(t, s)
		evidence, err := contract.EvidenceJSON(row.State)
		require.NoError(t, err)
		msgs := contract.DetectMessages(evidence)
		assert.Equal(t, sha(chatML(msgs[0].Content, msgs[1].Content)), s.PromptSHA256)
		p, err := det.RenderDetect(ctx, row)
		require.NoError(t, err)
		assert.Equal(t, p.SHA256, s.PromptSHA256)
		assert.Equal(t, contract.DetectPromptVersion, s.PromptVersion)
		assert.InDelta(t, contract.PYes(logprobs(s.Yes), logprobs(s.No)), s.PYes, 1e-9)
		assert.Equal(t, 0.55, s.Threshold)
		assert.Equal(t, s.PYes >= 0.55, s.Flagged)
		assert.Equal(t, s.Flagged, s.Abstain)
		assert.Equal(t, s.Flagged, got.Abstained)
		assert.Equal(t, want.Stats.PromptTokens+s.NPromptTokens, got.Stats.PromptTokens)
	}
	// The sample row's detector prompt, pinned (SmolLM2's template).
	p, err := det.RenderDetect(ctx, contract.SampleRow())
	require.NoError(t, err)
	evidence, err := contract.EvidenceJSON(contract.SampleRow().State)
	require.NoError(t, err)
	msgs := contract.DetectMessages(evidence)
	assert.Equal(t, sha(chatML(msgs[0].Content, msgs[1].Content)), p.SHA256)

	_, err = plain.RenderDetect(ctx, rows[0])
	assert.ErrorIs(t, err, gojev.ErrOptions)
	_, err = gojev.Open(ctx, "unused.gguf", gojev.Options{AbstainOnSuspect: true})
	assert.ErrorIs(t, err, gojev.ErrOptions)
}

func logprobs(ts []contract.TokenScore) []float64 {
	out := make([]float64, len(ts))
	for i, t := range ts {
		out[i] = t.Logprob
	}
	return out
}
