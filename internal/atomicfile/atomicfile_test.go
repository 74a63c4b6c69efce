package atomicfile_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/atomicfile"
)

func TestWriteReplacesWholeOrNotAtAll(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prior.json")
	require.NoError(t, atomicfile.WriteBytes(p, []byte("old\n")))
	// A writer that fails half-way leaves the old file and no temporary file.
	err := atomicfile.Write(p, func(w io.Writer) error {
		_, _ = w.Write([]byte("half"))
		return errors.New("disk gone")
	})
	assert.EqualError(t, err, "disk gone")
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "old\n", string(b))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "no temporary file left behind")

	require.NoError(t, atomicfile.WriteBytes(p, []byte("new\n")))
	b, err = os.ReadFile(p)
	require.NoError(t, err)
	assert.Equal(t, "new\n", string(b))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), st.Mode().Perm())
	assert.Error(t, atomicfile.WriteBytes(filepath.Join(dir, "missing", "x"), nil), "no folder")
}
