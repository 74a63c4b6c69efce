package cli

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newTestSet() (*FlagSet, *string, *int, *bool) {
	fs := NewFlagSet("demo")
	var out string
	var n int
	var q bool
	String(fs, &out, "o,output", "", "results `file`")
	Int(fs, &n, "t,threads", 4, "CPU `threads`")
	Bool(fs, &q, "q,quiet", "no progress")
	return fs, &out, &n, &q
}

func TestSpellingsShareOneValue(t *testing.T) {
	for _, args := range [][]string{{"-o", "x.jsonl", "-t", "2", "-q"}, {"--output", "x.jsonl", "--threads=2", "--quiet"}} {
		fs, out, n, q := newTestSet()
		require.NoError(t, Parse(fs, args, &bytes.Buffer{}, "Usage: demo"))
		assert.Equal(t, "x.jsonl", *out, args)
		assert.Equal(t, 2, *n, args)
		assert.True(t, *q, args)
	}
}

func TestPrintFlagsInDeclarationOrder(t *testing.T) {
	fs, _, _, _ := newTestSet()
	var b bytes.Buffer
	PrintFlags(&b, fs)
	assert.Equal(t, "  -o, --output file\n      results file\n"+
		"  -t, --threads threads\n      CPU threads (default 4)\n"+
		"  -q, --quiet\n      no progress\n", b.String())
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		help    bool
		message string
	}{
		{"help", []string{"-h"}, true, ""},
		{"unknown flag", []string{"--nope"}, false, "flag provided but not defined: -nope (jev demo -h lists the flags)"},
		{"bad int", []string{"-t", "many"}, false, `invalid value "many" for flag -t: parse error (jev demo -h lists the flags)`},
		{"positional", []string{"-q", "extra.jsonl"}, false, `unexpected arguments ["extra.jsonl"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs, _, _, _ := newTestSet()
			var stderr bytes.Buffer
			err := Parse(fs, tt.args, &stderr, "Usage: demo")
			if tt.help {
				require.ErrorIs(t, err, ErrHelp)
				assert.Contains(t, stderr.String(), "Usage: demo\n\nFlags:\n  -o, --output file")
				return
			}
			var ue UsageError
			require.True(t, errors.As(err, &ue), "%v is not a UsageError", err)
			assert.Equal(t, tt.message, err.Error())
			assert.Empty(t, stderr.String())
		})
	}
}

func TestParseInterleaved(t *testing.T) {
	fs, out, _, q := newTestSet()
	pos, err := ParseInterleaved(fs, []string{"a.jsonl", "-o", "r.html", "b.jsonl", "-q", "c.jsonl"}, &bytes.Buffer{}, "")
	require.NoError(t, err)
	assert.Equal(t, []string{"a.jsonl", "b.jsonl", "c.jsonl"}, pos)
	assert.Equal(t, "r.html", *out)
	assert.True(t, *q)
}

func TestUsageWrapsAndKeepsNil(t *testing.T) {
	base := errors.New("base")
	err := Usage(base)
	assert.ErrorIs(t, err, base)
	assert.ErrorAs(t, err, new(UsageError))
	assert.NoError(t, Usage(nil))
}
