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

// TestGuardedAndSpotlightOnTheSmallModel: each defended contract's prompt is the seed's with
// its sentence in the system text (and, spotlighted, the evidence's spaces marked) and nothing
// else; its results and PriDe prior carry its own prompt_version, and PriDe applies to it as
// to the direct contract.
func TestGuardedAndSpotlightOnTheSmallModel(t *testing.T) {
	ctx := context.Background()
	rows := exampleRows(t)[:3]
	direct := openDefault(t, gojev.Options{})
	for _, c := range []struct {
		contract gojev.Contract
		version  string
		undo     func(text, evidence string) string // the seed's prompt back from the variant's
	}{
		{gojev.Guarded, contract.GuardedPromptVersion, func(text, _ string) string {
			return strings.Replace(text, contract.GuardSentence+" ", "", 1)
		}},
		{gojev.Spotlight, contract.SpotlightPromptVersion, func(text, evidence string) string {
			return strings.Replace(strings.Replace(text, contract.SpotlightSentence+" ", "", 1), contract.Datamark(evidence), evidence, 1)
		}},
	} {
		d := openDefault(t, gojev.Options{Contract: c.contract})
		assert.Equal(t, c.version, d.Check().PromptVersion)
		for _, row := range rows {
			dp, err := direct.Render(ctx, row)
			require.NoError(t, err)
			vp, err := d.Render(ctx, row)
			require.NoError(t, err)
			require.NotEqual(t, dp[0].Text, vp[0].Text)
			evidence, err := contract.EvidenceJSON(row.State)
			require.NoError(t, err)
			assert.Equal(t, dp[0].Text, c.undo(vp[0].Text, evidence), "%s: only its sentence (and marks) differ", c.version)
			res, err := d.Decide(ctx, row)
			require.NoError(t, err)
			assert.Equal(t, c.version, res.PromptVersion)
			assert.Equal(t, vp[0].SHA256, res.PromptSHA256)
		}
		prior, _, err := d.EstimatePrior(ctx, rows)
		require.NoError(t, err)
		assert.Equal(t, c.version, prior.PromptVersion, "a variant's prior is its own contract's")
		pride := openDefault(t, gojev.Options{Contract: c.contract, Debias: debias.PriDe, Prior: prior})
		res, err := pride.Decide(ctx, rows[0])
		require.NoError(t, err)
		require.NotNil(t, res.Debias)
		assert.Equal(t, debias.PriDe, res.Debias.Method)
	}
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
