package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/internal/jsonl"
)

// readRows reads every row of a rows file into memory, with its input line number (blank lines
// skipped), for the commands that compare or measure rows rather than stream them (parity,
// bench): a bad row is an error naming its line (they do not skip rows), a file that cannot be
// opened a usage error.
func readRows(path string) ([]contract.Row, []int, error) {
	f, err := os.Open(path)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return nil, nil, cli.Usage(err)
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	var rows []contract.Row
	var lines []int
	sc := jsonl.NewScanner(f)
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
