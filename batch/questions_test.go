package batch_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/testenv"
)

const typedRow = `{"id": "t1", "state": {"message": "I was charged twice for my March invoice."}, "questions": {` +
	`"team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Charges and refunds.", "shipping": "Parcels."}, "label": "billing"}, ` +
	`"urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait", "Today"], "label": 1}, ` +
	`"billing": {"type": "noul", "instructions": "Is this about billing?", "label": true}, ` +
	`"other": {"type": "noul", "instructions": "Is it about the weather?"}}}`

// A file may mix rows of the contract with typed rows (questions about a state, as the System
// One API asks them): each typed row gets one AnswersRecord with its answers in the API's
// shape, labelled where the row says; a bad typed row gets an error record; a resumed run
// skips what is there, and ReadEntries reads every kind back.
func TestTypedRows(t *testing.T) {
	d, err := openSmall(t)(context.Background(), gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	in := rowLine("r1", 3) + "\n" + typedRow + "\n" +
		`{"id": "t2", "state": "s", "questions": {"q": {"type": "choice", "criteria": {"a": null}, "label": "b"}}}` + "\n" +
		`{"id": "t3", "state": "s", "questions": {"q": {"type": "score", "criteria": ["x"], "label": 3}}}` + "\n" +
		`{"id": "t4", "questions": {"q": {"type": "noul", "instructions": "?"}}}` + "\n"
	dir := t.TempDir()
	rows := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(in), 0o644))
	out := filepath.Join(dir, "out.jsonl")
	sum, err := (&batch.Job{Input: rows, Output: out, Decider: d}).Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, sum.Rows)
	assert.Equal(t, 2, sum.Decided)
	assert.Equal(t, 3, sum.Errors)
	assert.Equal(t, 3, sum.Labelled, "the typed row's three labelled questions")

	f, err := os.Open(out)
	require.NoError(t, err)
	entries, cut, err := batch.ReadEntries(f)
	f.Close()
	require.NoError(t, err)
	require.Zero(t, cut)
	require.Len(t, entries, 5)
	assert.NotNil(t, entries[0].Record)
	a := entries[1].Answers
	require.NotNil(t, a)
	assert.Equal(t, `"t1"`, string(a.ID))
	assert.Equal(t, 2, a.Line)
	assert.Equal(t, filepath.Base(testenv.SmallModel(t)), a.Model)
	require.Len(t, a.Answers, 4)
	assert.Equal(t, []string{"team", "urgency", "billing", "other"}, []string{a.Answers[0].Name, a.Answers[1].Name, a.Answers[2].Name, a.Answers[3].Name}, "in the row's order")
	team := a.Answers[0]
	assert.Equal(t, "choice", team.Type)
	require.NotNil(t, team.Correct)
	assert.Equal(t, team.Choice == "billing", *team.Correct)
	assert.Equal(t, "billing", team.Label)
	assert.Equal(t, "direct-options-v1", team.PromptVersion)
	billing := a.Answers[2]
	require.NotNil(t, billing.Correct)
	assert.Equal(t, billing.Noul >= 0.5, *billing.Correct)
	assert.Equal(t, "noul-v1", billing.PromptVersion)
	assert.Nil(t, a.Answers[3].Correct, "no label, no verdict")
	assert.Greater(t, a.Usage.InputTokens, 0)
	assert.Equal(t, 5, a.Usage.OutputTokens, "one answer token a prompt: the score's rubric read in both orders")
	assert.Len(t, team.QuestionSHA256, 64, "each answer keyed to its question, for jev calibrate")
	assert.NotEqual(t, team.QuestionSHA256, billing.QuestionSHA256)
	require.NotNil(t, billing.YesNo, "a noul's raw readout kept")
	assert.InDelta(t, billing.YesNo.PYes, billing.Noul, 1e-12, "uncalibrated: the readout's own p_yes")
	for i, want := range []string{`label "b"`, `label 3`, `missing "state"`} {
		require.NotNil(t, entries[2+i].Error, "line %d", 3+i)
		assert.Contains(t, entries[2+i].Error.Error, want, "line %d", 3+i)
	}

	// Resumed with nothing left: the typed record is recognised as done.
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	sum, err = (&batch.Job{Input: rows, Output: out, Decider: d, Resume: true}).Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 5, sum.Skipped)
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, after))
}
