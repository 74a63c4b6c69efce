package contract_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/pyjson"
)

func optionsJSON(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprintf(`{"id": "o%d", "description": "option %d"}`, i, i)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func TestParseRow(t *testing.T) {
	good := `{"id": "r1", "state": {"message": "hi", "amount": 1.50}, "question": "Which?", "options": ` + optionsJSON(2) + `, "label": "o1"}`
	row, err := contract.ParseRow([]byte(good))
	require.NoError(t, err)
	assert.Equal(t, "r1", row.ID)
	assert.Equal(t, "Which?", row.Question)
	assert.Equal(t, []contract.Option{{ID: "o0", Description: "option 0"}, {ID: "o1", Description: "option 1"}}, row.Options)
	assert.Equal(t, "o1", row.Label)
	evidence, err := pyjson.String(row.State)
	require.NoError(t, err)
	assert.Equal(t, `{"message": "hi", "amount": 1.5}`, evidence, "key order kept, floats as Python writes them")

	numeric, err := contract.ParseRow([]byte(`{"id": 17, "state": null, "question": "", "options": ` + optionsJSON(16) + `}`))
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage("17"), numeric.IDJSON())
	assert.Empty(t, numeric.Label)
	assert.Len(t, numeric.Options, 16)

	bad := []struct {
		name, line, wantID string
		also               error
	}{
		{"malformed", `{"id": "x", "state": `, "null", nil},
		{"not an object", `[1, 2]`, "null", nil},
		{"missing id", `{"state": 1, "question": "q", "options": ` + optionsJSON(1) + `}`, "null", nil},
		{"id wrong type", `{"id": [1], "state": 1, "question": "q", "options": ` + optionsJSON(1) + `}`, "null", nil},
		{"id NaN", `{"id": NaN, "state": 1, "question": "q", "options": ` + optionsJSON(1) + `}`, "null", nil},
		{"id Infinity", `{"id": Infinity, "state": 1, "question": "q", "options": ` + optionsJSON(1) + `}`, "null", nil},
		{"id -Infinity", `{"id": -Infinity, "state": 1, "question": "q", "options": ` + optionsJSON(1) + `}`, "null", nil},
		{"missing state", `{"id": "a", "question": "q", "options": ` + optionsJSON(1) + `}`, `"a"`, nil},
		{"missing question", `{"id": "a", "state": 1, "options": ` + optionsJSON(1) + `}`, `"a"`, nil},
		{"question not a string", `{"id": "a", "state": 1, "question": 5, "options": ` + optionsJSON(1) + `}`, `"a"`, nil},
		{"missing options", `{"id": "a", "state": 1, "question": "q"}`, `"a"`, nil},
		{"zero options", `{"id": "a", "state": 1, "question": "q", "options": []}`, `"a"`, contract.ErrNoOptions},
		{"257 options", `{"id": "a", "state": 1, "question": "q", "options": ` + optionsJSON(257) + `}`, `"a"`, contract.ErrTooManyRowOptions},
		{"duplicate option ids", `{"id": "a", "state": 1, "question": "q", "options": [{"id": "x", "description": ""}, {"id": "x", "description": ""}]}`, `"a"`, nil},
		{"option without id", `{"id": "a", "state": 1, "question": "q", "options": [{"description": "d"}]}`, `"a"`, nil},
		{"option not an object", `{"id": "a", "state": 1, "question": "q", "options": ["x"]}`, `"a"`, nil},
		{"label not an option", `{"id": "a", "state": 1, "question": "q", "options": ` + optionsJSON(1) + `, "label": "zz"}`, `"a"`, nil},
		{"empty line", ``, "null", nil},
		{"label not a string", `{"id": "a", "state": 1, "question": "q", "options": ` + optionsJSON(1) + `, "label": 3}`, `"a"`, nil},
	}
	// An id that is not JSON, set through the Go API, is written as a string.
	assert.Equal(t, json.RawMessage(`"NaN"`), contract.Row{ID: json.Number("NaN")}.IDJSON())
	for _, tc := range bad {
		t.Run(tc.name, func(t *testing.T) {
			row, err := contract.ParseRow([]byte(tc.line))
			require.ErrorIs(t, err, contract.ErrRow)
			if tc.also != nil {
				assert.ErrorIs(t, err, tc.also)
			}
			assert.Equal(t, tc.wantID, string(row.IDJSON()))
		})
	}
}

// Rows built in Go get ParseRow's checks from Validate, and any Go number as an id.
func TestValidateHandBuiltRows(t *testing.T) {
	opts := []contract.Option{{ID: "a"}, {ID: "b"}}
	for _, tc := range []struct {
		name string
		row  contract.Row
		want string // "" means valid
		id   string
	}{
		{"valid, int id", contract.Row{ID: 7, Options: opts}, "", "7"},
		{"valid, string id", contract.Row{ID: "x", Options: opts, Label: "b"}, "", `"x"`},
		{"valid, no id", contract.Row{Options: opts}, "", "null"},
		{"float id", contract.Row{ID: 2.5, Options: opts}, "", "2.5"},
		{"bool id", contract.Row{ID: true, Options: opts}, `"id" must be a string or a number, not bool`, "null"},
		{"no options", contract.Row{ID: "x"}, "at least one option", `"x"`},
		{"duplicate ids", contract.Row{ID: "x", Options: []contract.Option{{ID: "a"}, {ID: "a"}}}, `duplicate option id "a"`, `"x"`},
		{"empty id", contract.Row{ID: "x", Options: []contract.Option{{ID: "a"}, {ID: ""}}}, "option 1 has an empty id", `"x"`},
		{"label not an option", contract.Row{ID: "x", Options: opts, Label: "c"}, `"label" "c" is not one of the option ids`, `"x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.row.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, contract.ErrRow)
				assert.ErrorContains(t, err, tc.want)
			}
			assert.Equal(t, tc.id, string(tc.row.IDJSON()))
		})
	}
}
