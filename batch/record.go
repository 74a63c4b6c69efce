package batch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
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

// Line is one line of a JSONL file as Scanner reads it.
type Line struct {
	// N is the line's number, from 1; Offset where it starts; Size its length with its
	// newline.
	N      int
	Offset int64
	Size   int
	// Bytes is the line without its newline (not trimmed).
	Bytes []byte
	// Cut marks a last line without a newline. In a results file that is a write cut short
	// (a kill, a full disk): every record is written as one whole line, so record readers
	// leave it out (Resume truncates it, Merge refuses the part). In a rows file it is the
	// last row, which editors often leave without a newline.
	Cut bool
}

// Scanner reads a JSONL file line by line, of any length, numbering the lines from 1. It is
// the one line reader of gojev's files: rows, results, merge parts. The policy for a last line
// without its newline is Line.Cut's.
type Scanner struct {
	br   *bufio.Reader
	line Line
	off  int64
	n    int
	err  error
	done bool
}

// NewScanner reads r.
func NewScanner(r io.Reader) *Scanner { return &Scanner{br: bufio.NewReaderSize(r, 1<<20)} }

// Scan advances to the next line, false at the end or on an error (Err).
func (s *Scanner) Scan() bool {
	if s.done {
		return false
	}
	b, err := s.br.ReadBytes('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		s.err, s.done = err, true
		return false
	}
	if errors.Is(err, io.EOF) {
		s.done = true
		if len(b) == 0 {
			return false
		}
	}
	s.n++
	s.line = Line{N: s.n, Offset: s.off, Size: len(b), Bytes: bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r")), Cut: errors.Is(err, io.EOF)}
	s.off += int64(len(b))
	return true
}

// Line is the line Scan read.
func (s *Scanner) Line() Line { return s.line }

// Err is the read error that stopped Scan (nil at the end of the input).
func (s *Scanner) Err() error { return s.err }

// End is the offset just past the last line that ended with a newline.
func (s *Scanner) End() int64 {
	if s.line.Cut {
		return s.line.Offset
	}
	return s.off
}

// Head is what Resume and Merge read of a record: its input line (0 in files of jev versions
// before records carried it) and its row's key (RowKey).
type Head struct {
	Line int
	Key  string
}

// ParseHead reads a record's "line" and "id" (a JSON string, number or null; numbers kept as
// written); ok is false when the line is not a JSON object with an "id".
func ParseHead(line []byte) (h Head, ok bool) {
	var rec struct {
		ID   json.RawMessage `json:"id"`
		Line int             `json:"line"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&rec) != nil || rec.ID == nil {
		return Head{}, false
	}
	var id any
	idDec := json.NewDecoder(bytes.NewReader(rec.ID))
	idDec.UseNumber()
	if idDec.Decode(&id) != nil {
		return Head{}, false
	}
	return Head{Line: rec.Line, Key: RowKey(id, rec.Line)}, true
}

// RowKey names a row for matching records to rows: its id as a JSON string ("s…") or number
// ("n…"), or, when it has none, its input line number.
func RowKey(id any, lineNo int) string {
	switch v := id.(type) {
	case string:
		return "s" + v
	case json.Number:
		return "n" + v.String()
	}
	return "line " + strconv.Itoa(lineNo)
}

// KeyID writes a RowKey as the id it stands for, for a message.
func KeyID(key string) string {
	switch {
	case strings.HasPrefix(key, "s"):
		return strconv.Quote(key[1:])
	case strings.HasPrefix(key, "n"):
		return key[1:]
	}
	return "null"
}

// Entry is one whole line of a results file: a decision (Record) or an error record (Error).
type Entry struct {
	// N is the line's number in the results file, from 1.
	N      int
	Record *Record
	Error  *ErrorRecord
}

// InputLine is the input line the entry is about.
func (e Entry) InputLine() int {
	if e.Record != nil {
		return e.Record.Line
	}
	return e.Error.Line
}

// Decode reads one line of a results file: a decision (a "prompt_version") or an error record
// (an "error"). Anything else wraps ErrNotRecord.
func Decode(line []byte) (*Record, *ErrorRecord, error) {
	var head struct {
		PromptVersion string          `json:"prompt_version"`
		Error         *string         `json:"error"`
		ID            json.RawMessage `json:"id"`
		Line          int             `json:"line"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNotRecord, err)
	}
	switch {
	case head.Error != nil:
		return nil, &ErrorRecord{ID: head.ID, Line: head.Line, Error: *head.Error}, nil
	case head.PromptVersion != "":
		rec := &Record{Result: new(gojev.Result)}
		if err := json.Unmarshal(line, rec); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", ErrNotRecord, err)
		}
		return rec, nil, nil
	}
	return nil, nil, fmt.Errorf("%w: neither a decision (prompt_version) nor an error record (error)", ErrNotRecord)
}

// ReadEntries reads every whole line of a results file, in order. A last line without its
// newline is no entry (Line.Cut): cut is its length in bytes (0 when the file ends with a
// newline). Blank lines are skipped; any other line that is not a record is an error naming
// its line (ErrNotRecord).
func ReadEntries(r io.Reader) (entries []Entry, cut int, err error) {
	sc := NewScanner(r)
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
		rec, er, err := Decode(l.Bytes)
		if err != nil {
			return nil, 0, fmt.Errorf("line %d: %w", l.N, err)
		}
		entries = append(entries, Entry{N: l.N, Record: rec, Error: er})
	}
	return entries, cut, sc.Err()
}

// ErrBusy: another process holds a results file's lock (two runs, or two shards, on one file).
var ErrBusy = errors.New("another process is writing this file (another jev decide on the same -o?)")
