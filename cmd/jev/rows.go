package main

import (
	"errors"
	"io/fs"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/cli"
)

// readRows reads a JSONL file of rows with their line numbers (batch.ReadRows); a bad row is
// an error naming its line (parity and bench compare rows, they do not skip them), a file that
// cannot be opened a usage error.
func readRows(path string) ([]contract.Row, []int, error) {
	rows, lines, err := batch.ReadRows(path)
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "open" {
		return nil, nil, cli.Usage(err)
	}
	return rows, lines, err
}
