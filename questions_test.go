package gojev_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
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
	// The score's rubric is read without content once per Decider: read it first, so that the
	// Ask measured below decodes its four questions' prompts alone.
	_, err := d.Ask(ctx, "first", map[string]gojev.Question{"urgency": qs["urgency"]})
	require.NoError(t, err)
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

// Every question of an Ask is checked, its prompt's length against n_ctx included, before any
// is queued: an Ask refused for its second question decodes none of the others (before, the
// first was queued and decoded, and the second refused only when it reached the decoder).
func TestAskChecksEveryQuestionBeforeQueueing(t *testing.T) {
	ctx := context.Background()
	d, err := gojev.New(ctx, &backendtest.Scripted{NCtx: 600}, gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	short := gojev.Choice{Instructions: "Which?", Criteria: []gojev.Criterion{{Name: "a"}, {Name: "b"}}}
	long := gojev.Choice{Instructions: strings.Repeat("Which one, really? ", 40), Criteria: []gojev.Criterion{{Name: "a"}, {Name: "b"}}}
	_, err = d.Ask(ctx, "s", map[string]gojev.Question{"a": short, "b": long})
	var qe *gojev.QuestionError
	require.ErrorAs(t, err, &qe)
	assert.Equal(t, "b", qe.Name)
	var tl *backend.PromptTooLongError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, 600, tl.NCtx)
	assert.Zero(t, d.Stats().Decodes, "nothing decoded")
	assert.Zero(t, d.Queued(), "nothing queued")

	_, err = d.Ask(ctx, "s", map[string]gojev.Question{"a": short})
	require.NoError(t, err)
	assert.Equal(t, int64(1), d.Stats().Decodes)
	assert.Zero(t, d.Queued())
}

// Prompts counts a question's prompts without rendering it: the count an Ask then decodes.
func TestPromptsIsWhatAnAskDecodes(t *testing.T) {
	ctx := context.Background()
	criteria := func(n int) []gojev.Criterion {
		var out []gojev.Criterion
		for i := range n {
			out = append(out, gojev.Criterion{Name: strconv.Itoa(i), Description: "option " + strconv.Itoa(i)})
		}
		return out
	}
	for _, tc := range []struct {
		name string
		opts gojev.Options
		q    gojev.Question
		want int
	}{
		{"a choice", gojev.Options{}, gojev.Choice{Criteria: criteria(3)}, 1},
		{"a score: its rubric listed and reversed, and read without content", gojev.Options{}, &gojev.Score{Levels: []any{"low", "high"}}, 8},
		{"a score read once", gojev.Options{ScoreReading: gojev.ReadListed}, &gojev.Score{Levels: []any{"low", "high"}}, 1},
		{"a knockout of 20: two groups and a final pass", gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}}, gojev.Choice{Criteria: criteria(20)}, 3},
		{"a knockout of 40: three groups and a final pass", gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}}, gojev.Choice{Criteria: criteria(40)}, 4},
		{"cyclic: every shift", gojev.Options{Debias: debias.Cyclic}, gojev.Choice{Criteria: criteria(5)}, 5},
		{"cyclic, permute 2", gojev.Options{Debias: debias.Cyclic, Permute: 2}, gojev.Choice{Criteria: criteria(6)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := gojev.New(ctx, &backendtest.Scripted{}, tc.opts)
			require.NoError(t, err)
			defer d.Close()
			assert.Equal(t, tc.want, d.Prompts(tc.q))
			_, err = d.Ask(ctx, "s", map[string]gojev.Question{"q": tc.q})
			require.NoError(t, err)
			assert.Equal(t, int64(tc.want), d.Stats().Prompts, "the prompts the Ask decoded")
		})
	}
	d, err := gojev.New(ctx, &backendtest.Scripted{}, gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, d.Prompts(gojev.Noul{Instructions: "?"}))
}

// An Answer's JSON has its type's fields, each present when zero: a score of 0 keeps "score".
func TestAnswerJSONKeepsZeros(t *testing.T) {
	for _, tc := range []struct {
		a    gojev.Answer
		want string
	}{
		{gojev.Answer{Type: "score", Legend: map[string]any{"0": "low", "1": "high"}, Probabilities: map[string]float64{"0": 1, "1": 0}},
			`{"type":"score","score":0,"confidence":0,"legend":{"0":"low","1":"high"},"probabilities":{"0":1,"1":0}}`},
		{gojev.Answer{Type: "noul"}, `{"type":"noul","noul":0}`},
		{gojev.Answer{Type: "choice", Choice: "a", Probabilities: map[string]float64{"a": 0.5, "b": 0.5}},
			`{"type":"choice","choice":"a","confidence":0,"probabilities":{"a":0.5,"b":0.5}}`},
	} {
		b, err := json.Marshal(tc.a)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(b))
		b, err = json.Marshal(&tc.a)
		require.NoError(t, err)
		assert.JSONEq(t, tc.want, string(b), "a pointer too")
	}
}

// A noul answer is finished as a row is: under the default settings it says it is
// uncalibrated, and under a profile holding the noul scoring its P(yes) is calibrated (before,
// neither: noul answers skipped the finishing step).
func TestNoulAnswersAreFinished(t *testing.T) {
	ctx := context.Background()
	state := map[string]any{"message": "I was charged twice for my March invoice."}
	qs := map[string]gojev.Question{"billing": gojev.Noul{Instructions: "Is this message about billing?"}}
	a, err := openDefault(t, gojev.Options{}).Ask(ctx, state, qs)
	require.NoError(t, err)
	plain := a["billing"]
	assert.True(t, plain.Result.Uncalibrated, "the default settings: no calibration covers noul")
	assert.Nil(t, plain.Result.Calibration)

	p := profileOf(calibrate.ScoringNoul, calibrate.Map{Method: calibrate.Temperature, T: 2, Binary: true, Rows: 100})
	p.Scorings[calibrate.ScoringPriDe] = profileOf(calibrate.ScoringPriDe, calibrate.Map{Method: calibrate.Temperature, T: 1, Rows: 100}).Scorings[calibrate.ScoringPriDe]
	a, err = openDefault(t, gojev.Options{Calibration: p}).Ask(ctx, state, qs)
	require.NoError(t, err)
	cal := a["billing"]
	pyes := cal.Result.YesNo.PYes
	assert.Equal(t, plain.Result.YesNo.PYes, pyes, "the raw readout unchanged")
	want := 1 / (1 + math.Exp(-math.Log(pyes/(1-pyes))/2))
	assert.InDelta(t, want, cal.Noul, 1e-12, "P(yes) through the noul scoring's temperature")
	require.NotNil(t, cal.Result.Calibration)
	assert.Equal(t, calibrate.ScoringNoul, cal.Result.Calibration.Scoring)
	assert.False(t, cal.Result.Uncalibrated)
	wantP := want
	if cal.Result.Chosen == "false" {
		wantP = 1 - want
	}
	assert.InDelta(t, wantP, cal.Result.Probability, 1e-12, "the probability of the answer given")
}

// UserMessages are the user messages the prompts of a question carry, written without
// rendering: the rendered prompt holds each one.
func TestUserMessagesAreThePromptsOwn(t *testing.T) {
	ctx := context.Background()
	d, err := gojev.New(ctx, &backendtest.Scripted{}, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}})
	require.NoError(t, err)
	defer d.Close()
	state := map[string]any{"message": "I was charged twice."}
	q := gojev.Choice{Instructions: "Which team?", Criteria: []gojev.Criterion{{Name: "billing", Description: "Charges."}, {Name: "shipping"}}}
	msgs, err := d.UserMessages(state, q)
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	ps, err := d.Render(ctx, contract.Row{ID: "q", State: state, Question: "Which team?",
		Options: []contract.Option{{ID: "billing", Description: "Charges."}, {ID: "shipping", Description: "shipping"}}})
	require.NoError(t, err)
	assert.Contains(t, ps[0].Text, "user: "+msgs[0]+"\n", "the rendered prompt carries the message")

	var many []gojev.Criterion
	for i := range 20 {
		many = append(many, gojev.Criterion{Name: strconv.Itoa(i)})
	}
	msgs, err = d.UserMessages(state, gojev.Choice{Instructions: "Which?", Criteria: many})
	require.NoError(t, err)
	assert.Len(t, msgs, 2, "a knockout's two group passes (its final pass is not known yet)")
	msgs, err = d.UserMessages(state, &gojev.Noul{Instructions: "Is it about billing?"})
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.True(t, strings.HasPrefix(msgs[0], "Context:\n"), msgs[0])
	assert.Contains(t, msgs[0], "Is it about billing?")
	_, err = d.UserMessages(state, gojev.Choice{})
	assert.ErrorIs(t, err, gojev.ErrQuestion)
}

// A score's rubric is read listed and reversed, and the two reads combined per level (the
// geometric mean of their distributions): a letter's preference that moves to the mirror
// position in the reverse read cancels. What is left, a pull that is the same in both orders
// (here letter B, the middle of three), is the rubric's content-free reading, read once per
// question with "N/A", "" and "[MASK]" as the state and divided out: on a scripted runtime whose
// content-free prompts score by the letter bias alone, the levels come out to the digit as
// the content alone scores them. ReadListed reads the rubric once, as before.
func TestScoreIsReadInBothOrders(t *testing.T) {
	ctx := context.Background()
	rt := &backendtest.Scripted{Scores: map[string]float64{"low": 0, "mid": math.Log(2), "high": math.Log(5)},
		Bias: map[byte]float64{'A': 2, 'B': 1}}
	state := "charged twice"
	q := map[string]gojev.Question{"s": gojev.Score{Levels: []any{"low", "mid", "high"}}}
	d, err := gojev.New(ctx, rt, gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 8, d.Prompts(q["s"]), "two reads, and the rubric's six content-free reads")
	a, err := d.Ask(ctx, state, q)
	require.NoError(t, err)
	assert.Equal(t, int64(8), d.Stats().Decodes)
	s := a["s"]
	want := debias.Softmax([]float64{0, math.Log(2), math.Log(5)})
	for i, p := range want {
		assert.InDelta(t, p, s.Probabilities[strconv.Itoa(i)], 1e-12, "level %d", i)
	}
	assert.InDelta(t, want[1]+2*want[2], s.Score, 1e-12)
	db := s.Result.Debias
	require.NotNil(t, db)
	assert.Equal(t, gojev.ReadBothOrders, db.Reading)
	assert.Equal(t, debias.None, db.Method, "the reverse read is the bias control: no prior")
	require.Len(t, db.Permutations, 1)
	assert.True(t, db.Permutations[0].Reversed)
	// Content-free, low met A (+2) then C, high C then A: +1 each; mid met B (+1) both times.
	assert.InDeltaSlice(t, debias.Softmax([]float64{1, 1, 1}), db.ContentFreeLevels, 1e-12, "the mean pull of A and C equals B's here")
	assert.Equal(t, []float64{2, 1 + math.Log(2), math.Log(5)}, scriptedLogits(s.Result), "the listed read's raw fields stay")

	// The content-free reading is the question's, read once: another state, two reads.
	assert.Equal(t, 2, d.Prompts(q["s"]))
	_, err = d.Ask(ctx, "charged once", q)
	require.NoError(t, err)
	assert.Equal(t, int64(10), d.Stats().Decodes)

	// Rows asked at once, before the rubric's content-free reading is known, share one reading:
	// its six prompts are queued once, not once per row in flight.
	fresh, err := gojev.New(ctx, rt, gojev.Options{})
	require.NoError(t, err)
	defer fresh.Close()
	var calls []*gojev.AskCall
	for i := range 5 {
		c, err := fresh.BeginAsk(ctx, fmt.Sprintf("charged %d times", i), q)
		require.NoError(t, err)
		calls = append(calls, c)
	}
	for _, c := range calls {
		a, err := c.Wait(ctx)
		require.NoError(t, err)
		assert.InDeltaSlice(t, debias.Softmax([]float64{1, 1, 1}), a["s"].Result.Debias.ContentFreeLevels, 1e-12)
	}
	assert.Equal(t, int64(5*2+6), fresh.Stats().Prompts, "two reads a row, six content-free reads in all")

	listed, err := gojev.New(ctx, rt, gojev.Options{ScoreReading: gojev.ReadListed, Debias: debias.None})
	require.NoError(t, err)
	defer listed.Close()
	a, err = listed.Ask(ctx, state, q)
	require.NoError(t, err)
	once := debias.Softmax([]float64{2, 1 + math.Log(2), math.Log(5)})
	assert.InDelta(t, once[0], a["s"].Probabilities["0"], 1e-12, "one read: the letter bias stays")
	assert.Equal(t, 1, listed.Prompts(q["s"]))
	_, err = gojev.New(ctx, rt, gojev.Options{ScoreReading: "sideways"})
	assert.ErrorIs(t, err, gojev.ErrOptions)
}

// scriptedLogits are a direct result's raw logits by position.
func scriptedLogits(r *gojev.Result) []float64 {
	var out []float64
	for _, o := range r.Options {
		out = append(out, *o.Logit)
	}
	return out
}

// An answer to a question that Options.QuestionCalibration holds is calibrated by that
// question's own map (its scoring named by QuestionSHA256), before the shipped profile; an
// answer to any other question is finished as without it. The key is the question's type,
// instructions and criteria: the state and the name are not part of it.
func TestQuestionsAreCalibratedByTheirOwnMaps(t *testing.T) {
	ctx := context.Background()
	billing := gojev.Noul{Instructions: "Is this message about billing?"}
	shipping := gojev.Noul{Instructions: "Is this message about shipping?"}
	team := gojev.Choice{Instructions: "Which team?", Criteria: []gojev.Criterion{{Name: "billing", Description: "Charges."}, {Name: "shipping", Description: "Parcels."}}}
	kb, err := gojev.QuestionSHA256(billing)
	require.NoError(t, err)
	kt, err := gojev.QuestionSHA256(team)
	require.NoError(t, err)
	ks, err := gojev.QuestionSHA256(&shipping)
	require.NoError(t, err)
	assert.Len(t, kb, 64)
	assert.NotEqual(t, kb, ks, "other instructions, another key")
	named := gojev.Noul{Instructions: "Is this message about billing?", True: "It mentions a charge."}
	kn, err := gojev.QuestionSHA256(named)
	require.NoError(t, err)
	assert.NotEqual(t, kb, kn, "criteria are part of the key")

	p := profileOf(calibrate.QuestionScoring(kb), calibrate.Map{Method: calibrate.Temperature, T: 3, Binary: true, Rows: 40})
	p.Scorings[calibrate.QuestionScoring(kt)] = profileOf("x", calibrate.Map{Method: calibrate.Temperature, T: 0.5, Rows: 40}).Scorings["x"]
	require.True(t, p.Questions())
	d := openDefault(t, gojev.Options{QuestionCalibration: p})
	qs := map[string]gojev.Question{"b": billing, "s": shipping, "t": team}
	a, err := d.Ask(ctx, map[string]any{"message": "Where is my parcel? I was charged for it."}, qs)
	require.NoError(t, err)

	b := a["b"].Result
	require.NotNil(t, b.Calibration)
	assert.Equal(t, calibrate.QuestionScoring(kb), b.Calibration.Scoring)
	pyes := b.YesNo.PYes
	assert.InDelta(t, 1/(1+math.Exp(-math.Log(pyes/(1-pyes))/3)), a["b"].Noul, 1e-12, "P(yes) through the question's temperature")
	assert.False(t, b.Uncalibrated)

	s := a["s"].Result
	assert.Nil(t, s.Calibration, "a question the profile does not hold")
	assert.True(t, s.Uncalibrated, "no calibration covers it under the defaults: it says so")

	tr := a["t"].Result
	require.NotNil(t, tr.Calibration)
	assert.Equal(t, calibrate.QuestionScoring(kt), tr.Calibration.Scoring, "before the shipped 2-4 band")
	assert.InDeltaSlice(t, p.Scorings[calibrate.QuestionScoring(kt)].Fitted.Apply(tr.CalibrationScores()), tr.Calibration.Probabilities, 1e-12)

	// Refused: a profile of other scorings, or of another contract.
	_, err = gojev.New(ctx, &backendtest.Scripted{}, gojev.Options{QuestionCalibration: profileOf(calibrate.ScoringPriDe, calibrate.Map{Method: calibrate.Temperature, T: 1, Rows: 40})})
	assert.ErrorIs(t, err, gojev.ErrOptions)
	assert.ErrorIs(t, err, calibrate.ErrMismatch)
	other := profileOf(calibrate.QuestionScoring(kb), calibrate.Map{Method: calibrate.Temperature, T: 3, Binary: true, Rows: 40})
	other.PromptVersion = contract.BinaryPromptVersion
	_, err = gojev.New(ctx, &backendtest.Scripted{}, gojev.Options{QuestionCalibration: other})
	assert.ErrorIs(t, err, calibrate.ErrMismatch)
}
