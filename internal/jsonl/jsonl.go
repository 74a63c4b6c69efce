// Package jsonl reads the JSONL files gojev reads and writes (rows, results, merge parts) line
// by line, of any length, numbering the lines from 1: the one line reader of those files.
package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

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
	// leave it out (a resumed run truncates it, a merge refuses the part). In a rows file it
	// is the last row, which editors often leave without a newline.
	Cut bool
}

// Scanner reads a JSONL file line by line. The policy for a last line without its newline is
// Line.Cut's. Not safe for concurrent use.
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

// Encoder returns an encoder of values as JSON lines: HTML characters unescaped, one line and
// its newline per value. The bytes it returns are valid until its next call; it is not safe
// for concurrent use.
func Encoder() func(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	return func(v any) ([]byte, error) {
		buf.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	}
}

// Transform calls line for every line of r (trimmed of white space, with its number from 1)
// and writes what it returns to w with a single Write (nothing when it returns nil). It stops
// at the end of r, at the first error of line or of writing, or when ctx is done before a line
// starts (an error naming the line).
func Transform(ctx context.Context, r io.Reader, w io.Writer, line func(text []byte, n int) ([]byte, error)) error {
	sc := NewScanner(r)
	for sc.Scan() {
		l := sc.Line()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before line %d: %w", l.N, err)
		}
		b, err := line(bytes.TrimSpace(l.Bytes), l.N)
		if err != nil {
			return err
		}
		if b == nil {
			continue
		}
		if _, err := w.Write(b); err != nil {
			return fmt.Errorf("writing: %w", err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading: %w", err)
	}
	return nil
}
