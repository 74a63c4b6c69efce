package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/app/report"
)

func TestPercentilesNearestRank(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- { // unsorted on purpose
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	p50, p95 := percentiles(d)
	assert.Equal(t, 50.0, p50)
	assert.Equal(t, 95.0, p95)
	p50, p95 = percentiles([]time.Duration{7 * time.Millisecond})
	assert.Equal(t, 7.0, p50)
	assert.Equal(t, 7.0, p95)
}

func TestCompareAndChart(t *testing.T) {
	r := &Report{Rows: 2, Threads: 2, Contract: "direct-options-v1", HardwarePromptTokensPerS: 400,
		Engine:     &Path{Name: "engine", DecisionsPerS: 6, PromptTokensPerS: 360, SHA: [][]string{{"a"}, {"b"}}, Chosen: []string{"x", "y"}},
		Sequential: &Path{Name: "sequential", DecisionsPerS: 1.5, PromptTokensPerS: 300, SHA: [][]string{{"a"}, {"b"}}, Chosen: []string{"x", "y"}},
		HTTP:       &Path{Name: "http", DecisionsPerS: 2, PromptTokensPerS: 320, SHA: [][]string{{"a"}, {"c"}}, Chosen: []string{"x", "z"}},
	}
	r.Compare()
	assert.InDelta(t, 3.0, r.Ratios.EngineVsHTTP, 1e-12)
	assert.InDelta(t, 4.0, r.Ratios.EngineVsSequential, 1e-12)
	assert.InDelta(t, 0.9, r.Ratios.PrefillEfficiency, 1e-12)
	assert.False(t, r.SamePrompts)
	assert.False(t, r.SameChoices)
	assert.Len(t, r.Differences, 2)

	var text strings.Builder
	r.WriteText(&text)
	assert.Regexp(t, `\n  engine\s+6\.000\s+360\.0\s`, text.String())
	assert.Contains(t, text.String(), "engine/http 3.00×, engine/sequential 4.00×, prefill efficiency 90%")
	assert.Contains(t, text.String(), "same prompts false, same choices false")

	var svg bytes.Buffer
	require.NoError(t, r.WriteSVG(&svg))
	assert.True(t, strings.HasPrefix(svg.String(), "<?xml") || strings.Contains(svg.String(), "<svg"))
	assert.Contains(t, svg.String(), "engine")

	out := filepath.Join(t.TempDir(), "bench.json")
	chart, err := r.Save(out)
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(out, ".json")+".svg", chart)
	var back Report
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, r.Ratios, back.Ratios)
	saved, err := os.ReadFile(chart)
	require.NoError(t, err)
	assert.Equal(t, svg.String(), string(saved), "the chart beside it")
}

// The pride scorings read an existing prior file: a missing one is a batch.SetupError that
// says how to estimate it.
func TestSweepNeedsAnExistingPrior(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prior.json")
	_, err := readPrior(path, debias.ModelID{File: "m.gguf"})
	var se *batch.SetupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "PriorFile", se.Field)
	assert.ErrorContains(t, err, path+": no such file: jev decide --debias pride --prior "+path+" --prior-only")
}

// The --scorings list is split, trimmed and checked against the prior file, in both directions.
func TestParseScorings(t *testing.T) {
	for _, c := range []struct {
		list, prior string
		want        []string
		err         string
	}{
		{"raw, permute-2 ,cyclic", "", []string{"raw", "permute-2", "cyclic"}, ""},
		{"raw,pride+permute-4", "p.json", []string{"raw", "pride+permute-4"}, ""},
		{"raw,detect,pride+detect", "p.json", []string{"raw", "detect", "pride+detect"}, ""},
		{"raw,detect+pride", "p.json", nil, `unknown scoring "detect+pride"`},
		{"raw,pride", "", nil, "--scorings with pride needs --prior FILE"},
		{"raw,cyclic", "p.json", nil, "--prior FILE serves the pride scorings"},
		{"raw,permute-x", "", nil, `--scorings: unknown scoring "permute-x"`},
		{"raw,permute-17", "", nil, `unknown scoring "permute-17"`},
		{"raw,", "", nil, `unknown scoring ""`},
	} {
		got, err := ParseScorings(c.list, c.prior)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.list)
			continue
		}
		require.NoError(t, err, c.list)
		assert.Equal(t, c.want, got)
	}
}

func TestCutDetect(t *testing.T) {
	for _, c := range []struct {
		name, want string
		detect     bool
	}{
		{"detect", "raw", true},
		{"pride+detect", "pride", true},
		{"pride+permute-2+detect", "pride+permute-2", true},
		{"pride", "pride", false},
		{"detector", "detector", false},
	} {
		got, detect := CutDetect(c.name)
		assert.Equal(t, c.want, got, c.name)
		assert.Equal(t, c.detect, detect, c.name)
	}
}

func TestSweepText(t *testing.T) {
	sw := &Sweep{Rows: 6, Block: 4, Threads: 2, Model: "/m/small.gguf", Contract: "direct-options-v1", Started: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC),
		Paths: []*ScoringPath{{Scoring: "raw", Rows: 6, PromptsPerRow: 1, WallS: 3, WallVsBase: 1, TokensDecoded: 600, DecodedVsBase: 1},
			{Scoring: "permute-2", Rows: 6, Labelled: 6, Correct: 3, Accuracy: 0.5, AccuracyCI: report.Wilson(3, 6), PromptsPerRow: 2, WallS: 4.5, WallVsBase: 1.5, TokensDecoded: 900, DecodedVsBase: 1.5}}}
	var b strings.Builder
	sw.WriteText(&b)
	out := b.String()
	assert.True(t, strings.HasPrefix(out, "bench: direct-options-v1, 6 rows under 2 scorings, blocks of 4 rows interleaved, 2 threads, small.gguf (2026-12-01T10:00:00Z)\n"))
	assert.Regexp(t, `\n  raw\s+1\.00 n/a\s+3\.0\s+0\.50\s+1\.00×\s+600\s+1\.00×\n`, out)
	assert.Regexp(t, `\n  permute-2\s+2\.00 50\.0% \(3/6\)\s+\d`, out)
	assert.Contains(t, out, "against raw, in this one run")
}
