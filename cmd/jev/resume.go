package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gojev/gojev/contract"
)

// jev decide --resume: continue a run whose -o file holds the records of part of the input.
//
// Every record a run writes names its row by input line number ("line") and id. Resuming
// reads the existing file, drops a last line without its newline (a write cut short by a
// crash or a full disk), and then skips each input row that already has a record: the row at
// a line number the file holds, after checking that the record's id is that row's id (else the
// file is another input's output, and resuming stops). Files written before records carried
// line numbers are matched by id (as many times as the file holds it, so rows sharing an id
// are each decided once), and an id-less error record by its line. The other rows are decided
// and their records appended.

// resumeSet is the rows an output file already holds.
type resumeSet struct {
	// byLine holds the rowKey of each record with a line number, by that line number.
	byLine map[int]string
	// byID counts the records without a line number (older files) by rowKey.
	byID map[string]int
	// Records counts the whole records read; Dropped is the length in bytes of the cut last
	// line that was removed (0 when the file ended with a newline).
	Records, Dropped int
}

// recordHead is what resuming and merging read of a record: its input line (0 in files of
// jev versions before records carried it) and its row's rowKey.
type recordHead struct {
	line int
	key  string
}

// parseRecordHead reads a record's "line" and "id" (a JSON string, number or null; numbers
// kept as written); ok is false when the line is not a JSON object with an "id".
func parseRecordHead(line []byte) (recordHead, bool) {
	var rec struct {
		ID   json.RawMessage `json:"id"`
		Line int             `json:"line"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&rec) != nil || rec.ID == nil {
		return recordHead{}, false
	}
	var id any
	idDec := json.NewDecoder(bytes.NewReader(rec.ID))
	idDec.UseNumber()
	if idDec.Decode(&id) != nil {
		return recordHead{}, false
	}
	return recordHead{line: rec.Line, key: rowKey(id, rec.Line)}, true
}

// rowKey names a row for resuming: its id as a JSON string or number, or, when it has none,
// its input line number.
func rowKey(id any, lineNo int) string {
	switch v := id.(type) {
	case string:
		return "s" + v
	case json.Number:
		return "n" + v.String()
	}
	return "line " + strconv.Itoa(lineNo)
}

// errNotThisInput: a resumed -o file holds a record whose id is not the id of the input row
// at the record's line.
var errNotThisInput = errors.New("the -o file is not this input's output")

// skip reports whether the row at lineNo already has a record, consuming that record. It
// fails with errNotThisInput when the record at lineNo names another row.
func (s *resumeSet) skip(line []byte, lineNo int) (bool, error) {
	if len(s.byLine) == 0 && len(s.byID) == 0 {
		return false, nil
	}
	row, _ := contract.ParseRow(line) // on error the row still carries the id it could read
	key := rowKey(row.ID, lineNo)
	if rec, ok := s.byLine[lineNo]; ok {
		if rec != key {
			return false, fmt.Errorf("%w: its record for line %d has id %s, the input's line %d has %s", errNotThisInput, lineNo, keyID(rec), lineNo, keyID(key))
		}
		delete(s.byLine, lineNo)
		return true, nil
	}
	if s.byID[key] == 0 {
		return false, nil
	}
	s.byID[key]--
	return true, nil
}

// keyID writes a rowKey as the id it stands for.
func keyID(key string) string {
	switch {
	case strings.HasPrefix(key, "s"):
		return strconv.Quote(key[1:])
	case strings.HasPrefix(key, "n"):
		return key[1:]
	}
	return "null"
}

// lines returns the line numbers the file's records name, in increasing order.
func (s *resumeSet) lines() []int {
	return slices.Sorted(maps.Keys(s.byLine))
}

// openResume opens the results file at path for appending after the records it holds, which
// it returns as a resumeSet. A missing file starts an empty run. A last line without its
// newline is cut off; any other line that is not a JSON record is an error (the file is not
// jev decide output, and appending to it would mix two things).
func openResume(path string) (*os.File, *resumeSet, error) {
	f, err := openLocked(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--resume: %w", err)
	}
	set, end, err := readRecords(f)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.Size() > end {
			set.Dropped = int(st.Size() - end)
			err = f.Truncate(end)
		}
	}
	if err == nil {
		_, err = f.Seek(end, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, nil, fmt.Errorf("--resume %s: %w", path, err)
	}
	return f, set, nil
}

// readRecords reads the complete lines of r and returns their keys and the offset just past
// the last newline.
func readRecords(r io.Reader) (*resumeSet, int64, error) {
	set := &resumeSet{byLine: map[int]string{}, byID: map[string]int{}}
	br := bufio.NewReaderSize(r, 1<<20)
	var end int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return set, end, nil // a last line without a newline is left out
		}
		if err != nil {
			return nil, 0, err
		}
		rec, ok := parseRecordHead(line)
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("line %d is not a jev decide record (%.60q): cannot resume into this file", n, line)
		case rec.line <= 0 && strings.HasPrefix(rec.key, "line "):
			return nil, 0, fmt.Errorf("line %d is a record with neither an id nor a line number: cannot resume into this file", n)
		case rec.line <= 0:
			set.byID[rec.key]++
		case set.byLine[rec.line] != "":
			return nil, 0, fmt.Errorf("line %d is a second record for input line %d: cannot resume into this file", n, rec.line)
		default:
			set.byLine[rec.line] = rec.key
		}
		set.Records++
		end += int64(len(line))
	}
}

// syncingWriter writes to a file and syncs it to disk at most once per interval, so a
// machine crash loses at most about that much output. (A killed process loses nothing that
// was written: each record is one write of a whole line, and the kernel keeps it.)
type syncingWriter struct {
	f        *os.File
	interval time.Duration
	last     time.Time
}

func (w *syncingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err == nil && time.Since(w.last) >= w.interval {
		w.last = time.Now()
		err = syncFile(w.f)
	}
	return n, err
}

// syncFile is f.Sync (fsync) for files that can be synced: /dev/null, a pipe or a terminal
// given as -o answers EINVAL, which is not a failure to keep the results.
func syncFile(f *os.File) error {
	err := f.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		return nil
	}
	return err
}

// closeSynced syncs and closes f.
func closeSynced(f *os.File) error {
	if err := syncFile(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// openResumeOutput opens the -o file of a resumed run (see openResume).
func openResumeOutput(path string) (io.Writer, func() error, *resumeSet, error) {
	if path == "" || path == "-" {
		return nil, nil, nil, usageError{errors.New("--resume needs the results file of the run to continue: -o FILE")}
	}
	f, set, err := openResume(path)
	if err != nil {
		return nil, nil, nil, err
	}
	return &syncingWriter{f: f, interval: time.Second, last: time.Now()}, func() error { return closeSynced(f) }, set, nil
}

// report says on w what a resumed run kept of its file (nothing when the file was empty: a
// first run).
func (s *resumeSet) report(w io.Writer, path string) {
	if s.Records == 0 && s.Dropped == 0 {
		return
	}
	fmt.Fprintf(w, "jev decide: resuming into %s: %s kept", path, plural(s.Records, "record"))
	if s.Dropped > 0 {
		fmt.Fprintf(w, ", a cut last line of %d bytes dropped", s.Dropped)
	}
	fmt.Fprintln(w)
}

// plural writes "1 record", "2 records".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
