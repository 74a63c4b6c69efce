package gojev_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/contract"
)

// Typed questions on the small model: a choice and a score are the rows they map to (the same
// prompt, bit for bit), a noul reads p_yes under noul-v1, and the questions about one state
// share its tokens: decoded together, they cost fewer tokens than their prompts hold.
func TestAskOnTheSmallModel(t *testing.T) {
	d := openDefault(t, gojev.Options{})
	ctx := context.Background()
	state := map[string]any{"message": strings.Repeat("I was charged twice for my March invoice and nobody answers my emails. ", 4)}
	qs := map[string]gojev.Question{
		"team": gojev.Choice{Instructions: "Which team should handle this ticket?", Criteria: []gojev.Criterion{
			{Name: "billing", Description: "Charges, refunds and invoices."}, {Name: "shipping", Description: "Parcels."}, {Name: "account"}}},
		"urgency": gojev.Score{Instructions: "How urgent is this message?", Levels: []any{"Can wait", "This week", "Today"}},
		"billing": gojev.Noul{Instructions: "Is this message about billing?"},
		"angry":   gojev.Noul{Instructions: "The customer is angry.", True: "upset or hostile"},
	}
	before := d.Stats()
	answers, err := d.Ask(ctx, state, qs)
	require.NoError(t, err)
	after := d.Stats()
	require.Len(t, answers, 4)

	team := answers["team"]
	row := contract.Row{ID: "team", State: state, Question: "Which team should handle this ticket?", Options: []contract.Option{
		{ID: "billing", Description: "Charges, refunds and invoices."}, {ID: "shipping", Description: "Parcels."}, {ID: "account", Description: "account"}}}
	ps, err := d.Render(ctx, row)
	require.NoError(t, err)
	assert.Equal(t, ps[0].SHA256, team.Result.PromptSHA256, "a choice is its row: the seed's prompt")
	assert.Equal(t, "choice", team.Type)
	sum, top := 0.0, 0.0
	for _, c := range []string{"billing", "shipping", "account"} {
		sum += team.Probabilities[c]
		top = math.Max(top, team.Probabilities[c])
	}
	assert.InDelta(t, 1, sum, 1e-9)
	assert.Equal(t, top, team.Probabilities[team.Choice])
	assert.InDelta(t, (top-1.0/3)/(1-1.0/3), team.Confidence, 1e-12)

	urgency := answers["urgency"]
	assert.InDelta(t, urgency.Probabilities["1"]+2*urgency.Probabilities["2"], urgency.Score, 1e-12)
	assert.Equal(t, map[string]any{"0": "Can wait", "1": "This week", "2": "Today"}, urgency.Legend)
	assert.Equal(t, contract.PromptVersion, urgency.Result.PromptVersion)

	for _, n := range []string{"billing", "angry"} {
		a := answers[n]
		assert.Equal(t, contract.NoulPromptVersion, a.Result.PromptVersion)
		assert.Len(t, a.Result.PromptSHA256, 64)
		assert.Greater(t, a.Noul, 0.0)
		assert.Less(t, a.Noul, 1.0)
		assert.Equal(t, a.Result.YesNo.PYes, a.Noul)
	}
	assert.NotEqual(t, answers["billing"].Result.PromptSHA256, answers["angry"].Result.PromptSHA256)

	prompts := 0
	for _, a := range answers {
		prompts += a.Result.Stats.PromptTokens
	}
	decoded := after.DecodedTokens - before.DecodedTokens
	assert.Less(t, decoded, int64(prompts)*3/4, "the state's tokens decoded once per system text: %d of %d", decoded, prompts)

	// A question that cannot be decided fails the Ask, naming it.
	_, err = d.Ask(ctx, state, map[string]gojev.Question{"team": qs["team"], "bad": gojev.Choice{Instructions: "?"}})
	var qe *gojev.QuestionError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, "bad", qe.Name)
	assert.ErrorIs(t, err, gojev.ErrQuestion)
	_, err = d.Ask(ctx, state, map[string]gojev.Question{"dup": gojev.Choice{Criteria: []gojev.Criterion{{Name: "a"}, {Name: "a"}}}})
	assert.ErrorIs(t, err, gojev.ErrQuestion)
	_, err = d.Ask(ctx, state, map[string]gojev.Question{"empty": gojev.Noul{}})
	assert.ErrorIs(t, err, gojev.ErrQuestion)
	long := map[string]any{"message": strings.Repeat("word ", 5000)}
	_, err = d.Ask(ctx, long, map[string]gojev.Question{"n": gojev.Noul{Instructions: "?"}})
	assert.ErrorIs(t, err, backend.ErrPromptTooLong)
}

// A score's levels are options "0" … "n−1" in rubric order, so its answer follows the row's
// letters: on a scripted runtime the expected level and the probabilities are exact.
func TestScoreIsTheExpectedLevel(t *testing.T) {
	d, err := gojev.New(context.Background(), &backendtest.Scripted{Scores: map[string]float64{"low": 0, "mid": math.Log(2), "high": math.Log(5)}}, gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	a, err := d.Ask(context.Background(), "s", map[string]gojev.Question{"s": &gojev.Score{Levels: []any{"low", "mid", "high"}}})
	require.NoError(t, err)
	s := a["s"]
	assert.InDelta(t, 0.125, s.Probabilities["0"], 1e-12)
	assert.InDelta(t, 0.625, s.Probabilities["2"], 1e-12)
	assert.InDelta(t, 0.25+2*0.625, s.Score, 1e-12)
	assert.InDelta(t, (0.625-1.0/3)/(2.0/3), s.Confidence, 1e-12)
	_, err = d.Ask(context.Background(), "s", map[string]gojev.Question{"n": gojev.Noul{Instructions: "?"}})
	assert.True(t, errors.Is(err, contract.ErrBinarySlot), "a model without single-token yes/no cannot answer a noul: %v", err)
}
