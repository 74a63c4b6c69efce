package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/testenv"
)

// A System One user's fixed questions, calibrated from their own labelled answers: jev decide
// on labelled typed rows keeps each answer's question key and scores, jev calibrate fits one
// scoring per question from them (no decoding), and the profile loads as jev serve
// --calibration reads it.
func TestQuestionProfileFromTypedRows(t *testing.T) {
	type ticket struct {
		ID      string         `json:"id"`
		State   map[string]any `json:"state"`
		Options []struct {
			ID          string `json:"id"`
			Description string `json:"description"`
		} `json:"options"`
		Label string `json:"label"`
	}
	var tickets []ticket
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl"))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		var row ticket
		require.NoError(t, json.Unmarshal([]byte(line), &row))
		tickets = append(tickets, row)
	}
	require.Len(t, tickets, 12)
	billing := gojev.Noul{Instructions: "Is this support ticket about billing?"}
	team := gojev.Choice{Instructions: "Which team should handle this support ticket?"}
	criteria := map[string]any{}
	var names []string
	for _, o := range tickets[0].Options {
		team.Criteria = append(team.Criteria, gojev.Criterion{Name: o.ID, Description: o.Description})
		criteria[o.ID] = o.Description
		names = append(names, o.ID)
	}
	var lines []string
	for _, tk := range tickets {
		// json.Marshal sorts a map's keys; the criteria's order is the question's, so write
		// them in order by hand.
		crit := make([]string, len(names))
		for i, n := range names {
			kb, _ := json.Marshal(n)
			vb, _ := json.Marshal(criteria[n])
			crit[i] = string(kb) + ": " + string(vb)
		}
		state, _ := json.Marshal(tk.State)
		label, _ := json.Marshal(tk.Label)
		lines = append(lines, `{"id": "`+tk.ID+`", "state": `+string(state)+`, "questions": {`+
			`"billing": {"type": "noul", "instructions": "Is this support ticket about billing?", "label": `+map[bool]string{true: "true", false: "false"}[tk.Label == "billing"]+`}, `+
			`"team": {"type": "choice", "instructions": "Which team should handle this support ticket?", "criteria": {`+strings.Join(crit, ", ")+`}, "label": `+string(label)+`}}}`)
	}
	dir := t.TempDir()
	rows := filepath.Join(dir, "typed.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out := filepath.Join(dir, "answers.jsonl")
	code, _, stderr := jev(t, "", withModel(t, "decide", "-q", "-i", rows, "-o", out)...)
	require.Equal(t, 0, code, stderr)

	kb, err := gojev.QuestionSHA256(billing)
	require.NoError(t, err)
	kt, err := gojev.QuestionSHA256(team)
	require.NoError(t, err)
	first, err := os.ReadFile(out)
	require.NoError(t, err)
	rec := map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(strings.SplitN(string(first), "\n", 2)[0]), &rec))
	ans := rec["answers"].(map[string]any)
	assert.Equal(t, kb, ans["billing"].(map[string]any)["question_sha256"], "the record's key is the question's")
	assert.Equal(t, "noul", ans["billing"].(map[string]any)["scoring"])
	assert.Len(t, ans["team"].(map[string]any)["scores"], 5)

	prof := filepath.Join(dir, "questions.json")
	code, stdout, stderr := jev(t, "", "calibrate", out, "--folds", "3", "-o", prof)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "scoring "+calibrate.QuestionScoring(kb)+": 12 labelled fitting rows")
	assert.Contains(t, stdout, "scoring "+calibrate.QuestionScoring(kt)+": 12 labelled fitting rows")
	p, err := calibrate.LoadQuestions(prof)
	require.NoError(t, err)
	assert.Equal(t, "direct-options-v1", p.PromptVersion)
	for _, k := range []string{kb, kt} {
		sc := p.Scorings[calibrate.QuestionScoring(k)]
		require.NotNil(t, sc, k)
		require.NotNil(t, sc.Fitted.Pooled.Shrink, "12 rows: a shrunk temperature")
		assert.Equal(t, k == kb, sc.Fitted.Pooled.Binary, "the noul's map is binary, the choice's not")
		assert.Len(t, sc.Points, 12)
	}
}
