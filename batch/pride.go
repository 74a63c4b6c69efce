package batch

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/jsonl"
)

// priorSample picks PriDe's estimation sample from a rows file, without looking at labels:
// for each option count k ≥ 2, debias.SampleIndices among the valid rows with k options
// (fraction of them, at least minRows, evenly spaced; debias.DefaultSampleFraction and
// DefaultMinSampleRows are PriDe's). It returns the rows with their line numbers, in file
// order, and the number of valid rows with two or more options, and rewinds r.
func priorSample(r io.ReadSeeker, fraction float64, minRows int) (rows []contract.Row, lines []int, total int, err error) {
	byK := map[int][]int{}
	if err := scanRows(r, func(line []byte, lineNo int) {
		if row, err := contract.ParseRow(line); err == nil && len(row.Options) > 1 {
			byK[len(row.Options)] = append(byK[len(row.Options)], lineNo)
			total++
		}
	}); err != nil {
		return nil, nil, 0, err
	}
	want := map[int]bool{}
	for _, ls := range byK {
		for _, i := range debias.SampleIndices(len(ls), fraction, minRows) {
			want[ls[i]] = true
		}
	}
	if err := scanRows(r, func(line []byte, lineNo int) {
		if want[lineNo] {
			row, _ := contract.ParseRow(line)
			rows, lines = append(rows, row), append(lines, lineNo)
		}
	}); err != nil {
		return nil, nil, 0, err
	}
	return rows, lines, total, nil
}

// estimateOn estimates the prior on sample rows (at the input lines lines) and returns their
// decisions by line.
func estimateOn(ctx context.Context, d *gojev.Decider, rows []contract.Row, lines []int) (*debias.Prior, map[int]gojev.Outcome, error) {
	prior, outs, err := d.EstimatePrior(ctx, rows)
	if err != nil {
		return nil, nil, err
	}
	byLine := make(map[int]gojev.Outcome, len(outs))
	for i, o := range outs {
		byLine[lines[i]] = o
	}
	return prior, byLine, nil
}

// errNoSample: a rows file has no row with two or more options to estimate a prior from.
var errNoSample = fmt.Errorf("batch: no row with two or more options to estimate the prior from")

// scanRows calls fn for every line of r (trimmed, numbered from 1), from its start, then
// rewinds r.
func scanRows(r io.ReadSeeker, fn func(line []byte, lineNo int)) error {
	if _, err := r.Seek(0, io.SeekStart); err != nil {
		return err
	}
	sc := jsonl.NewScanner(r)
	for sc.Scan() {
		fn(bytes.TrimSpace(sc.Line().Bytes), sc.Line().N)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading rows: %w", err)
	}
	_, err := r.Seek(0, io.SeekStart)
	return err
}
