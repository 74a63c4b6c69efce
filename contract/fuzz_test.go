package contract_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/gojev/gojev/contract"
)

// FuzzParseRow: any input line either parses into a row the contract can build messages for,
// or returns an error wrapping ErrRow; it never panics, and the row's id is always JSON.
func FuzzParseRow(f *testing.F) {
	f.Add([]byte(`{"id": "r1", "state": {"message": "hi"}, "question": "q", "options": [{"id": "a", "description": "A."}], "label": "a"}`))
	f.Add([]byte(`{"id": 3, "state": null, "question": "", "options": []}`))
	f.Add([]byte(`[{"id": "x"}]`))
	f.Add([]byte(`{"id": "r", "state": [1e400, -0.0, "\ud83d\ude00"], "question": "q", "options": [{"id": "a"}, {"id": "a"}]}`))
	f.Add([]byte(`{"id": Infinity, "state": NaN, "question": "q", "options": [{"id": "a"}]}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		row, err := contract.ParseRow(line)
		// The id goes into every output record, error records included: it must be JSON.
		if id := row.IDJSON(); !json.Valid(id) {
			t.Fatalf("IDJSON %q is not JSON", id)
		}
		if err != nil {
			if !errorsIs(err, contract.ErrRow) {
				t.Fatalf("error does not wrap ErrRow: %v", err)
			}
			_ = row.IDJSON()
			return
		}
		if len(row.Options) > contract.MaxOptions {
			return // decided in passes of at most MaxOptions (a knockout)
		}
		msgs, err := contract.DirectMessages(row.State, row.Question, row.Options)
		if err != nil || len(msgs) != 2 {
			t.Fatalf("a parsed row must build its messages: %v", err)
		}
	})
}

func errorsIs(err, target error) bool { return errors.Is(err, target) }
