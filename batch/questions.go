package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/pyjson"
	"github.com/gojev/gojev/systemone"
)

// A typed row asks named questions about one state, as the System One API does:
//
//	{"id": "t1", "state": {...}, "questions": {"team": {"type": "choice", "criteria": {...}, "label": "billing"},
//	                                          "urgent": {"type": "noul", "instructions": "...", "label": true}}}
//
// Each question is the API's (systemone.ParseQuestions), with an optional "label": a choice's
// criterion name, a score's level (an integer from 0), a noul's true or false. Its record is an
// AnswersRecord.

// AnswersRecord is the line of a typed row: its id and input line, and what the API answers,
// the model, the answers by question name (each with its label and whether it was right where
// the row gave one: a choice its label, a score's most probable level its label, a noul's
// p_yes ≥ 0.5 its label) and the usage.
type AnswersRecord struct {
	ID   json.RawMessage
	Line int
	systemone.Response
}

// MarshalJSON writes {"id", "line", "model", "answers", "usage"}.
func (r AnswersRecord) MarshalJSON() ([]byte, error) {
	resp, err := json.Marshal(&r.Response)
	if err != nil {
		return nil, err
	}
	head, err := json.Marshal(pyjson.Object{{Key: "id", Value: r.ID}, {Key: "line", Value: r.Line}})
	if err != nil {
		return nil, err
	}
	return append(append(head[:len(head)-1], ','), resp[1:]...), nil
}

// UnmarshalJSON reads an answers record.
func (r *AnswersRecord) UnmarshalJSON(b []byte) error {
	var head struct {
		ID   json.RawMessage `json:"id"`
		Line int             `json:"line"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return err
	}
	r.ID, r.Line = head.ID, head.Line
	return json.Unmarshal(b, &r.Response)
}

// typedRow is a parsed typed row.
type typedRow struct {
	id        json.RawMessage
	state     any
	questions []systemone.Named
	labels    map[string]any
}

// isTypedRow reports whether a line is a typed row (an object with "questions") rather than a
// row of the contract ({"question", "options"}).
func isTypedRow(line []byte) bool {
	if !bytes.Contains(line, []byte(`"questions"`)) {
		return false
	}
	v, err := pyjson.Decode(line)
	if err != nil {
		return false
	}
	o, ok := v.(pyjson.Object)
	if !ok {
		return false
	}
	return slices.ContainsFunc(o, func(m pyjson.Member) bool { return m.Key == "questions" })
}

// parseTypedRow reads a typed row; on error it still returns the id it could read. Errors wrap
// contract.ErrRow.
func parseTypedRow(line []byte) (typedRow, error) {
	row := typedRow{id: json.RawMessage("null")}
	v, err := pyjson.Decode(line)
	if err != nil {
		return row, fmt.Errorf("%w: %w", contract.ErrRow, err)
	}
	o := v.(pyjson.Object)
	get := func(k string) (any, bool) {
		for _, m := range o {
			if m.Key == k {
				return m.Value, true
			}
		}
		return nil, false
	}
	id, ok := get("id")
	switch id.(type) {
	case string, json.Number:
		row.id = contract.Row{ID: id}.IDJSON()
	default:
		if !ok {
			return row, fmt.Errorf("%w: missing \"id\"", contract.ErrRow)
		}
		return row, fmt.Errorf("%w: \"id\" must be a string or a number", contract.ErrRow)
	}
	if row.state, ok = get("state"); !ok || row.state == nil {
		return row, fmt.Errorf("%w: missing \"state\"", contract.ErrRow)
	}
	qv, _ := get("questions")
	qs, ok := qv.(pyjson.Object)
	if !ok || len(qs) == 0 {
		return row, fmt.Errorf("%w: \"questions\" must be an object of at least one question", contract.ErrRow)
	}
	if row.questions, err = systemone.ParseQuestions(qs); err != nil {
		return row, fmt.Errorf("%w: %w", contract.ErrRow, err)
	}
	for i, m := range qs {
		q, _ := m.Value.(pyjson.Object)
		for _, f := range q {
			if f.Key != "label" || f.Value == nil {
				continue
			}
			if err := checkLabel(row.questions[i].Question, f.Value); err != nil {
				return row, fmt.Errorf("%w: question %q: label %s: %w", contract.ErrRow, m.Key, compactJSON(f.Value), err)
			}
			if row.labels == nil {
				row.labels = map[string]any{}
			}
			row.labels[m.Key] = f.Value
		}
	}
	return row, nil
}

// checkLabel checks a question's label: a choice's criterion name, a score's level, a noul's
// boolean.
func checkLabel(q gojev.Question, label any) error {
	switch q := q.(type) {
	case gojev.Choice:
		s, ok := label.(string)
		if !ok || !slices.ContainsFunc(q.Criteria, func(c gojev.Criterion) bool { return c.Name == s }) {
			return errors.New("a choice's label is one of its criteria's names")
		}
	case gojev.Score:
		if _, err := scoreLevel(label, len(q.Levels)); err != nil {
			return err
		}
	case gojev.Noul:
		if _, ok := label.(bool); !ok {
			return errors.New("a noul's label is true or false")
		}
	}
	return nil
}

// scoreLevel reads a score's label: an integer level from 0 to n-1.
func scoreLevel(label any, n int) (int, error) {
	num, ok := label.(json.Number)
	if !ok {
		return 0, errors.New("a score's label is a level, an integer")
	}
	l, err := strconv.Atoi(string(num))
	if err != nil || l < 0 || l >= n {
		return 0, fmt.Errorf("a score's label is a level from 0 to %d", n-1)
	}
	return l, nil
}

// answersRecord is a typed row's record from its answers.
func answersRecord(row typedRow, lineNo int, model string, answers map[string]*gojev.Answer) AnswersRecord {
	resp := systemone.ResponseOf(model, row.questions, answers)
	for i, q := range row.questions {
		if a := answers[q.Name]; a != nil && a.Result != nil {
			// The calibration input and a noul's raw readout, for fitting offline.
			resp.Answers[i].Scoring, resp.Answers[i].Scores = a.Result.CalibrationScoring(), a.Result.CalibrationScores()
			resp.Answers[i].YesNo = a.Result.YesNo
		}
		resp.Answers[i].QuestionSHA256, _ = gojev.QuestionSHA256(q.Question)
		label, ok := row.labels[q.Name]
		if !ok {
			continue
		}
		a := &resp.Answers[i].Answer
		a.Label = label
		var right bool
		switch a.Type {
		case "choice":
			right = a.Choice == label
		case "noul":
			right = (a.Noul >= 0.5) == label.(bool)
		case "score":
			level, _ := scoreLevel(label, len(a.Probabilities))
			best, top := 0, -1.0
			for j, m := range a.Probabilities {
				if p, _ := m.Value.(float64); p > top {
					best, top = j, p
				}
			}
			right = best == level
		}
		a.Correct = &right
	}
	return AnswersRecord{ID: row.id, Line: lineNo, Response: *resp}
}

// compactJSON writes a value for a message.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
