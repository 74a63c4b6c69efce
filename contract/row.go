package contract

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gojev/gojev/pyjson"
)

// ErrRow marks a row that cannot be decided: malformed JSON, a missing or mistyped field,
// 0 or more than 256 options, duplicate option ids. Errors from ParseRow wrap it (and
// ErrNoOptions / ErrTooManyRowOptions where those apply).
var ErrRow = errors.New("bad row")

// Row is one decision request, one JSON object per line:
//
//	{"id": …, "state": …, "question": "…", "options": [{"id": "…", "description": "…"}, …], "label": "…"}
//
// id is a string or a number; state is any JSON value and keeps its object key order, since
// it is embedded in the prompt byte for byte as Python's json.dumps writes it; label
// (optional) is the gold option id, used only to report accuracy. Other fields are ignored.
type Row struct {
	ID       any // string or json.Number as in the input (a Go integer or float in a hand-built row); nil when absent
	State    any // pyjson value: nil, bool, string, json.Number, []any, pyjson.Object
	Question string
	Options  []Option
	Label    string // "" when the row has none
}

// IDJSON returns the row id as JSON (a string, a number, or null), for output records.
func (r Row) IDJSON() json.RawMessage { return idJSON(r.ID) }

func idJSON(id any) json.RawMessage {
	switch v := id.(type) {
	case string:
		b, _ := json.Marshal(v)
		return b
	case json.Number:
		if json.Valid([]byte(v)) {
			return json.RawMessage(v.String())
		}
		b, _ := json.Marshal(v.String()) // NaN or Infinity set through the Go API: a string
		return b
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		b, _ := json.Marshal(v)
		return b
	case float32, float64:
		if b, err := json.Marshal(v); err == nil {
			return b
		}
	}
	return json.RawMessage("null")
}

// ParseRow decodes one JSONL line into a Row. On error it still returns the id it could read
// (Row.ID), so the caller can report the error against it. Errors wrap ErrRow.
func ParseRow(line []byte) (Row, error) {
	var row Row
	if len(line) == 0 {
		return row, fmt.Errorf("%w: empty line", ErrRow)
	}
	v, err := pyjson.Decode(line)
	var se *pyjson.SyntaxError
	switch {
	case errors.As(err, &se):
		return row, fmt.Errorf("%w: %w at byte %d: %s", ErrRow, pyjson.ErrSyntax, se.Offset, se.Msg)
	case err != nil:
		return row, fmt.Errorf("%w: %w", ErrRow, err)
	}
	obj, ok := v.(pyjson.Object)
	if !ok {
		return row, fmt.Errorf("%w: a row must be a JSON object", ErrRow)
	}
	get := func(key string) (any, bool) {
		for _, m := range obj {
			if m.Key == key {
				return m.Value, true
			}
		}
		return nil, false
	}
	if id, ok := get("id"); ok {
		switch v := id.(type) {
		case string:
			row.ID = id
		case json.Number:
			// pyjson also reads NaN, Infinity and -Infinity as numbers, as json.loads does;
			// they are not JSON, so no output record could carry them as the id.
			if !json.Valid([]byte(v)) {
				return row, fmt.Errorf("%w: \"id\" must be a string or a JSON number, not %s", ErrRow, v)
			}
			row.ID = id
		default:
			return row, fmt.Errorf("%w: \"id\" must be a string or a number", ErrRow)
		}
	} else {
		return row, fmt.Errorf("%w: missing \"id\"", ErrRow)
	}
	state, ok := get("state")
	if !ok {
		return row, fmt.Errorf("%w: missing \"state\"", ErrRow)
	}
	row.State = state
	q, ok := get("question")
	if !ok {
		return row, fmt.Errorf("%w: missing \"question\"", ErrRow)
	}
	if row.Question, ok = q.(string); !ok {
		return row, fmt.Errorf("%w: \"question\" must be a string", ErrRow)
	}
	rawOpts, ok := get("options")
	if !ok {
		return row, fmt.Errorf("%w: missing \"options\"", ErrRow)
	}
	list, ok := rawOpts.([]any)
	if !ok {
		return row, fmt.Errorf("%w: \"options\" must be an array", ErrRow)
	}
	if err := CheckRowOptionCount(len(list)); err != nil {
		return row, fmt.Errorf("%w: %w", ErrRow, err)
	}
	seen := make(map[string]bool, len(list))
	for i, item := range list {
		o, ok := item.(pyjson.Object)
		if !ok {
			return row, fmt.Errorf("%w: option %d must be an object", ErrRow, i)
		}
		var opt Option
		var hasID bool
		for _, m := range o {
			switch m.Key {
			case "id":
				s, ok := m.Value.(string)
				if !ok || s == "" {
					return row, fmt.Errorf("%w: option %d: \"id\" must be a non-empty string", ErrRow, i)
				}
				opt.ID, hasID = s, true
			case "description":
				s, ok := m.Value.(string)
				if !ok {
					return row, fmt.Errorf("%w: option %d: \"description\" must be a string", ErrRow, i)
				}
				opt.Description = s
			}
		}
		if !hasID {
			return row, fmt.Errorf("%w: option %d: missing \"id\"", ErrRow, i)
		}
		if seen[opt.ID] {
			return row, fmt.Errorf("%w: duplicate option id %q", ErrRow, opt.ID)
		}
		seen[opt.ID] = true
		row.Options = append(row.Options, opt)
	}
	if label, ok := get("label"); ok && label != nil {
		s, ok := label.(string)
		if !ok {
			return row, fmt.Errorf("%w: \"label\" must be a string", ErrRow)
		}
		if !seen[s] {
			return row, fmt.Errorf("%w: \"label\" %q is not one of the option ids", ErrRow, s)
		}
		row.Label = s
	}
	return row, nil
}

// Validate checks what ParseRow checks, for rows built in Go: 1..256 options (MaxRowOptions),
// unique non-empty option ids, a label among them. Every decision path calls it. Errors wrap
// ErrRow (and ErrNoOptions or ErrTooManyRowOptions for the count).
func (r Row) Validate() error {
	switch r.ID.(type) {
	case nil, string, json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
	default:
		return fmt.Errorf("%w: \"id\" must be a string or a number, not %T", ErrRow, r.ID)
	}
	if err := CheckRowOptionCount(len(r.Options)); err != nil {
		return fmt.Errorf("%w: %w", ErrRow, err)
	}
	seen := make(map[string]bool, len(r.Options))
	for i, o := range r.Options {
		if o.ID == "" {
			return fmt.Errorf("%w: option %d has an empty id", ErrRow, i)
		}
		if seen[o.ID] {
			return fmt.Errorf("%w: duplicate option id %q", ErrRow, o.ID)
		}
		seen[o.ID] = true
	}
	if r.Label != "" && !seen[r.Label] {
		return fmt.Errorf("%w: \"label\" %q is not one of the option ids", ErrRow, r.Label)
	}
	return nil
}
