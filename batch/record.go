package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/jsonl"
)

// Record is one decision line of a results file: the row's gojev.Result and the row's input
// line number (from 1), which Resume and Merge match records by. It is the one JSON shape of a
// result line, written by jev decide and by Run.
type Record struct {
	*gojev.Result
	Line int `json:"line"`
}

// ErrorRecord is the line of a row that could not be decided: its id as the input wrote it
// (null when unreadable), its input line, and why.
type ErrorRecord struct {
	ID    json.RawMessage `json:"id"`
	Line  int             `json:"line"`
	Error string          `json:"error"`
}

// ErrNotRecord: a line of a results file is not a record (a decision or an error record).
var ErrNotRecord = errors.New("not a jev decide record")

// head is what Resume and Merge read of a record: its input line (0 in files of jev versions
// before records carried it) and its row's key (rowKey).
type head struct {
	Line int
	Key  string
}

// parseHead reads a record's "line" and "id" (a JSON string, number or null; numbers kept as
// written); ok is false when the line is not a JSON object with an "id".
func parseHead(line []byte) (h head, ok bool) {
	var rec struct {
		ID   json.RawMessage `json:"id"`
		Line int             `json:"line"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&rec) != nil || rec.ID == nil {
		return head{}, false
	}
	var id any
	idDec := json.NewDecoder(bytes.NewReader(rec.ID))
	idDec.UseNumber()
	if idDec.Decode(&id) != nil {
		return head{}, false
	}
	return head{Line: rec.Line, Key: rowKey(id, rec.Line)}, true
}

// rowKey names a row for matching records to rows: its id as a JSON string ("s…") or number
// ("n…"), or, when it has none, its input line number.
func rowKey(id any, lineNo int) string {
	switch v := id.(type) {
	case string:
		return "s" + v
	case json.Number:
		return "n" + v.String()
	}
	return "line " + strconv.Itoa(lineNo)
}

// keyID writes a rowKey as the id it stands for, for a message.
func keyID(key string) string {
	switch {
	case strings.HasPrefix(key, "s"):
		return strconv.Quote(key[1:])
	case strings.HasPrefix(key, "n"):
		return key[1:]
	}
	return "null"
}

// Entry is one whole line of a results file: a decision (Record), a typed row's answers
// (Answers) or an error record (Error); one of the three is set.
type Entry struct {
	// N is the line's number in the results file, from 1.
	N       int
	Record  *Record
	Answers *AnswersRecord
	Error   *ErrorRecord
}

// InputLine is the input line the entry is about.
func (e Entry) InputLine() int {
	switch {
	case e.Record != nil:
		return e.Record.Line
	case e.Answers != nil:
		return e.Answers.Line
	}
	return e.Error.Line
}

// decodeEntry reads one line of a results file: a decision (a "prompt_version"), a typed row's
// answers (an "answers") or an error record (an "error"). Anything else wraps ErrNotRecord.
func decodeEntry(line []byte) (Entry, error) {
	var head struct {
		PromptVersion string          `json:"prompt_version"`
		Error         *string         `json:"error"`
		Answers       json.RawMessage `json:"answers"`
		ID            json.RawMessage `json:"id"`
		Line          int             `json:"line"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrNotRecord, err)
	}
	switch {
	case head.Error != nil:
		return Entry{Error: &ErrorRecord{ID: head.ID, Line: head.Line, Error: *head.Error}}, nil
	case head.PromptVersion != "":
		rec := &Record{Result: new(gojev.Result)}
		if err := json.Unmarshal(line, rec); err != nil {
			return Entry{}, fmt.Errorf("%w: %w", ErrNotRecord, err)
		}
		return Entry{Record: rec}, nil
	case head.Answers != nil:
		rec := &AnswersRecord{}
		if err := json.Unmarshal(line, rec); err != nil {
			return Entry{}, fmt.Errorf("%w: %w", ErrNotRecord, err)
		}
		return Entry{Answers: rec}, nil
	}
	return Entry{}, fmt.Errorf("%w: neither a decision (prompt_version), a typed row's answers (answers) nor an error record (error)", ErrNotRecord)
}

// ReadEntries reads every whole line of a results file, in order. A last line without its
// newline is no entry (a write cut short): cut is its length in bytes (0 when the file ends with a
// newline). Blank lines are skipped; any other line that is not a record is an error naming
// its line (ErrNotRecord).
func ReadEntries(r io.Reader) (entries []Entry, cut int, err error) {
	sc := jsonl.NewScanner(r)
	for sc.Scan() {
		l := sc.Line()
		if l.Cut {
			if len(bytes.TrimSpace(l.Bytes)) > 0 {
				cut = l.Size
			}
			break
		}
		if len(bytes.TrimSpace(l.Bytes)) == 0 {
			continue
		}
		e, err := decodeEntry(l.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", l.N, err)
		}
		e.N = l.N
		entries = append(entries, e)
	}
	return entries, cut, sc.Err()
}

// ErrBusy: another process holds a results file's lock (two runs, or two shards, on one file).
var ErrBusy = errors.New("another process is writing this file (another jev decide on the same -o?)")
