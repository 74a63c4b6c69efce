package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
)

// readRows reads a JSONL file of rows; a bad row is an error naming its line (parity compares
// rows, it does not skip them).
func readRows(path string) ([]contract.Row, error) {
	rows, _, err := readRowLines(path)
	return rows, err
}

// readRowLines is readRows with each row's input line number (from 1; blank lines skipped).
func readRowLines(path string) ([]contract.Row, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usageError{err}
	}
	defer f.Close()
	var rows []contract.Row
	var lines []int
	sc := batch.NewScanner(f)
	for sc.Scan() {
		l := sc.Line()
		if len(bytes.TrimSpace(l.Bytes)) == 0 {
			continue
		}
		row, err := contract.ParseRow(bytes.TrimSpace(l.Bytes))
		if err != nil {
			return nil, nil, fmt.Errorf("%s line %d: %w", path, l.N, err)
		}
		rows, lines = append(rows, row), append(lines, l.N)
	}
	return rows, lines, sc.Err()
}

// repoRoot finds the repository the jev binary was built in (bin/jev → ..), else the working
// directory; it locates third_party/ for llama-server and the template corpus.
func repoRoot() string {
	if exe, err := os.Executable(); err == nil {
		root := filepath.Dir(filepath.Dir(exe))
		if _, err := os.Stat(filepath.Join(root, "third_party")); err == nil {
			return root
		}
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "third_party", "llama.cpp.pin")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}
