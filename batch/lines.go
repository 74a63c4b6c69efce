package batch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gojev/gojev/contract"
)

// CountLines counts the lines of a regular file as Scanner numbers them (newlines, plus a last
// line without one) and rewinds it. It fails for anything else (stdin, a pipe).
func CountLines(f *os.File) (int, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, errors.New("not a regular file")
	}
	n, last := 0, byte('\n')
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	_, err = f.Seek(0, io.SeekStart)
	return n, err
}

// CountFileLines is CountLines of the file at path.
func CountFileLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return CountLines(f)
}

// Transform calls record for every line of r (trimmed, with its number from 1) and writes
// what it returns as one line, encoded by encode, with a single Write (nothing when it
// returns nil); a record that cannot be encoded (a NaN logit from a damaged model) becomes an
// ErrorRecord (UnencodableRecord). It is the one-line-at-a-time sibling of Run, for what
// needs no Decider window (rendering prompts, recalibrating records). It stops at the end of
// r, at the first error of record or of writing, or when ctx is done before a line starts.
func Transform(ctx context.Context, r io.Reader, w io.Writer, encode func(rec any) ([]byte, error), record func(line []byte, lineNo int) (any, error)) error {
	sc := NewScanner(r)
	for sc.Scan() {
		l := sc.Line()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before line %d: %w", l.N, err)
		}
		rec, err := record(bytes.TrimSpace(l.Bytes), l.N)
		if err != nil {
			return err
		}
		if rec == nil {
			continue
		}
		b, err := encode(rec)
		if err != nil {
			if b, err = encode(UnencodableRecord(rec, l.N, err)); err != nil {
				return err
			}
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("writing results: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading rows: %w", err)
	}
	return nil
}

// ReadRows reads every row of a rows file into memory, with its input line number (blank
// lines skipped), for the tools that compare or measure rows rather than stream them. A bad
// row is an error naming its line (they do not skip rows); a missing file wraps
// fs.ErrNotExist.
func ReadRows(path string) (rows []contract.Row, lines []int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := NewScanner(f)
	for sc.Scan() {
		l := sc.Line()
		line := bytes.TrimSpace(l.Bytes)
		if len(line) == 0 {
			continue
		}
		row, err := contract.ParseRow(line)
		if err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", path, l.N, err)
		}
		rows, lines = append(rows, row), append(lines, l.N)
	}
	return rows, lines, sc.Err()
}
