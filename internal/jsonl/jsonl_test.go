package jsonl_test

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/jsonl"
)

func TestCountLines(t *testing.T) {
	long := strings.Repeat("x", 3<<20) // longer than the read buffer
	for _, tc := range []struct {
		text string
		want int
	}{{"", 0}, {"a", 1}, {"a\n", 1}, {"a\nb", 2}, {"\n\n", 2}, {long + "\n" + long, 2}} {
		p := filepath.Join(t.TempDir(), "rows.jsonl")
		require.NoError(t, os.WriteFile(p, []byte(tc.text), 0o644))
		f, err := os.Open(p)
		require.NoError(t, err)
		n, err := jsonl.CountLines(f)
		require.NoError(t, err)
		assert.Equal(t, tc.want, n, "%.20q", tc.text)
		pos, err := f.Seek(0, io.SeekCurrent)
		require.NoError(t, err)
		assert.Zero(t, pos, "rewound")
		require.NoError(t, f.Close())
	}
}
