package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
)

func TestTextLines(t *testing.T) {
	wrong, right := false, true
	tests := []struct {
		name  string
		color bool
		rec   any
		want  string
	}{
		{"wrong, labelled", false, batch.Record{Result: &gojev.Result{ID: json.RawMessage(`"r1"`), Chosen: "refund", ChosenLetter: "B", Probability: 0.4567, Label: "card", Correct: &wrong}, Line: 3},
			"r1           refund               p=0.457 (B)  ✗ label card\n"},
		{"right, numeric id, abstained, coloured", true, &gojev.Result{ID: json.RawMessage(`7`), Chosen: "card", ChosenLetter: "A", Probability: 0.2, Abstained: true, Label: "card", Correct: &right},
			"7            card                 p=0.200 (A)  abstained  \033[32m✓\033[0m\n"},
		{"error record", false, batch.ErrorRecord{ID: json.RawMessage(`"r9"`), Line: 9, Error: "options: want 1 to 256"},
			"r9           error (line 9): options: want 1 to 256\n"},
		{"prompt record", false, promptRecord{ID: json.RawMessage(`"p"`), PromptVersion: "direct-options-v1", NPromptTokens: 12, PromptSHA256: "ab", Prompt: "hi"},
			"### p  direct-options-v1  12 tokens  sha256 ab\nhi\n\n"},
		{"anything else is a JSON line", false, map[string]int{"n": 1}, "{\"n\":1}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			line, err := textLines(tt.color)(tt.rec)
			require.NoError(t, err)
			assert.Equal(t, tt.want, string(line))
		})
	}
	_, err := textLines(false)(&gojev.Result{ID: json.RawMessage(`"nan"`), Probability: math.NaN()})
	assert.Error(t, err, "a NaN cannot be written as JSON, so the text line is refused as the JSON line is")
}
