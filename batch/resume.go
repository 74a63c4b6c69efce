package batch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/jsonl"
)

// Resuming: continue a run whose results file holds the records of part of the input.
//
// Every record a run writes names its row by input line number ("line") and id. Resuming
// reads the existing file, drops a last line without its newline (a write cut short by a
// crash or a full disk: Line.Cut), and then skips each input row that already has a record:
// the row at a line number the file holds, after checking that the record's id is that row's
// id (else the file is another input's output, and resuming stops). Files written before
// records carried line numbers are matched by id (as many times as the file holds it, so rows
// sharing an id are each decided once), and an id-less error record by its line. The other
// rows are decided and their records appended.

// ErrNotThisInput: a resumed results file holds a record whose id is not the id of the input
// row at the record's line.
var ErrNotThisInput = errors.New("the results file is not this input's output")

// output is a results file open for one run's records: its folder created, locked against a
// second writer (flock: ErrBusy), synced to disk about once a second while written and on
// Close. It is an io.Writer; each record should be written with one Write of a whole line.
type output struct {
	f       *os.File
	path    string
	created bool // the file did not exist before create
	started bool
	last    time.Time
}

// create opens path for a new run's records without truncating it yet: call Start once the run
// can start (the model loaded), so that a run that fails to start leaves an earlier results
// file as it was; Close removes a file create made if Start was never called.
func create(path string) (*output, error) {
	_, statErr := os.Lstat(path)
	f, err := openLocked(path)
	if err != nil {
		return nil, err
	}
	return &output{f: f, path: path, created: errors.Is(statErr, fs.ErrNotExist), last: time.Now()}, nil
}

// Start empties the file for the run's records.
func (o *output) Start() error {
	o.started = true
	if st, err := o.f.Stat(); err == nil && st.Mode().IsRegular() {
		return o.f.Truncate(0)
	}
	return nil
}

// Write writes p, syncing the file at most once a second, so a machine crash loses at most
// about that much output (a killed process loses nothing that was written).
func (o *output) Write(p []byte) (int, error) {
	n, err := o.f.Write(p)
	if err == nil && time.Since(o.last) >= time.Second {
		o.last = time.Now()
		err = syncFile(o.f)
	}
	return n, err
}

// Close syncs and closes the file, releasing its lock (and removes it when create made it and
// the run never started).
func (o *output) Close() error {
	err := closeSynced(o.f)
	if o.created && !o.started {
		return errors.Join(err, os.Remove(o.path))
	}
	return err
}

// Resume is a results file open to continue the run that wrote it: an io.WriteCloser positioned
// after the records it holds (locked against a second writer, synced about once a second),
// which Skip matches to the input's rows.
type Resume struct {
	*output
	// Records counts the whole records kept; Dropped is the length in bytes of a cut last
	// line that was removed (0 when the file ended with a newline).
	Records, Dropped int
	byLine           map[int]string // the rowKey of each record with a line number
	byID             map[string]int // records without a line number (older files), by rowKey
}

// OpenResume opens the results file at path (locked) to append after the records it holds. A
// missing file starts an empty run. A last line without its newline is cut off; any other line
// that is not a record is an error (the file is not a results file, and appending to it would
// mix two things).
func OpenResume(path string) (*Resume, error) {
	f, err := openLocked(path)
	if err != nil {
		return nil, err
	}
	r, end, err := readHeads(f)
	if err == nil {
		var st os.FileInfo
		if st, err = f.Stat(); err == nil && st.Size() > end {
			r.Dropped = int(st.Size() - end)
			err = f.Truncate(end)
		}
	}
	if err == nil {
		_, err = f.Seek(end, io.SeekStart)
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	r.output = &output{f: f, path: path, started: true, last: time.Now()}
	return r, nil
}

// readHeads reads the complete lines of r and returns their keys and the offset just past the
// last newline.
func readHeads(r io.Reader) (*Resume, int64, error) {
	set := &Resume{byLine: map[int]string{}, byID: map[string]int{}}
	sc := jsonl.NewScanner(r)
	for sc.Scan() {
		l := sc.Line()
		if l.Cut {
			break // a write cut short: left out (Line.Cut)
		}
		rec, ok := parseHead(l.Bytes)
		switch {
		case !ok:
			return nil, 0, fmt.Errorf("line %d is not a jev decide record (%.60q): cannot resume into this file", l.N, l.Bytes)
		case rec.Line <= 0 && strings.HasPrefix(rec.Key, "line "):
			return nil, 0, fmt.Errorf("line %d is a record with neither an id nor a line number: cannot resume into this file", l.N)
		case rec.Line <= 0:
			set.byID[rec.Key]++
		case set.byLine[rec.Line] != "":
			return nil, 0, fmt.Errorf("line %d is a second record for input line %d: cannot resume into this file", l.N, rec.Line)
		default:
			set.byLine[rec.Line] = rec.Key
		}
		set.Records++
	}
	return set, sc.End(), sc.Err()
}

// Skip reports whether the input row at lineNo (its line's text) already has a record,
// consuming that record (Config.Skip). It fails with ErrNotThisInput when the record at lineNo
// names another row.
func (s *Resume) Skip(line []byte, lineNo int) (bool, error) {
	if len(s.byLine) == 0 && len(s.byID) == 0 {
		return false, nil
	}
	row, _ := contract.ParseRow(line) // on error the row still carries the id it could read
	key := rowKey(row.ID, lineNo)
	if rec, ok := s.byLine[lineNo]; ok {
		if rec != key {
			return false, fmt.Errorf("%w: its record for line %d has id %s, the input's line %d has %s", ErrNotThisInput, lineNo, keyID(rec), lineNo, keyID(key))
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

// Lines returns the input line numbers the kept records name, in increasing order (before
// Skip consumes them).
func (s *Resume) Lines() []int { return slices.Sorted(maps.Keys(s.byLine)) }

// openLocked opens a results file for writing, creating it and its folder, and locks it when
// it is a regular file (lockFile), so that no two runs write one file; it does not truncate it.
func openLocked(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return f, nil // /dev/null, a pipe: nothing to protect
	}
	if err := lockFile(f); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// busy reports whether another process holds a results file's lock (a run still writing it).
func busy(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return heldByOther(f)
}

// syncFile is f.Sync (fsync) for files that can be synced: /dev/null, a pipe or a terminal
// given as the output answers EINVAL, which is not a failure to keep the results.
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
