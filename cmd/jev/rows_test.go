package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readRows skips blank lines, numbers the rows by input line, and names the line of a bad row.
func TestReadRows(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.jsonl")
	require.NoError(t, os.WriteFile(good, []byte(rowLine("a", 2)+"\n\n  \n"+rowLine("b", 3)), 0o644))
	rows, lines, err := readRows(good)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4}, lines)
	require.Len(t, rows, 2)
	assert.Len(t, rows[1].Options, 3)

	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(rowLine("a", 2)+"\n{\"id\": \"b\"}\n"), 0o644))
	_, _, err = readRows(bad)
	assert.ErrorContains(t, err, bad+" line 2: ")
	_, _, err = readRows(filepath.Join(dir, "none.jsonl"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}
