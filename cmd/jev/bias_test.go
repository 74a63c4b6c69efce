package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/testenv"
)

// withModel is the arguments of a jev command on the small model.
func withModel(t *testing.T, command string, args ...string) []string {
	return append(append([]string{command}, modelArgs(t)...), args...)
}

// firstRows copies the first n lines of a shared rows file into a temporary file.
func firstRows(t *testing.T, rel string, n int) string {
	t.Helper()
	f, err := os.Open(testenv.SharedData(t, rel))
	require.NoError(t, err)
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() && len(lines) < n {
		lines = append(lines, sc.Text())
	}
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	return path
}

func readResults(t *testing.T, path string) []gojev.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []gojev.Result
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r gojev.Result
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		out = append(out, r)
	}
	return out
}

// TestPriDeThroughTheCLI runs --debias pride on 24 Banking77 rows with the small model: the
// prior is estimated from a 10-row sample, saved with --prior, recorded in the run file, and a
// second run that reads the file decides every row with one decode and the same prior, the
// prompts and raw scores unchanged. The small model picks letter A on nearly every row, so the
// letter-skew warning fires on the raw run.
func TestPriDeThroughTheCLI(t *testing.T) {
	rows := firstRows(t, "banking77/sample-200-8opt.jsonl", 24)
	dir := t.TempDir()
	prior := filepath.Join(dir, "prior.json")

	code, _, stderr := jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "raw.jsonl"), "--debias", "none")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "the model is choosing a position, not an option")
	assert.Contains(t, stderr, "--debias pride")
	assert.Equal(t, 1, strings.Count(stderr, "warning:"), "warned once")

	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "pride.jsonl"), "--debias", "pride", "--prior", prior)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "estimating the letter prior from 10 rows under all their cyclic permutations (80 prompts)")
	// Its progress, not a terminal: a line at each tenth of the 80 prompts but the last.
	assert.Contains(t, stderr, "jev decide: PriDe: 8 of 80 prompts decoded in ")
	assert.Contains(t, stderr, "jev decide: PriDe: 72 of 80 prompts decoded in ")
	assert.Equal(t, 9, strings.Count(stderr, " prompts decoded in "), stderr)
	assert.Contains(t, stderr, "prior saved to "+prior)
	p, err := debias.LoadPrior(prior)
	require.NoError(t, err)
	p8, ok := p.For(8)
	require.True(t, ok)
	assert.Equal(t, 10, p.ByOptions[8].SampleRows)
	assert.Equal(t, "SmolLM2-135M-Instruct.Q4_1.gguf", p.Model.File)
	assert.Len(t, p.Model.SHA256, 64)

	raw := readResults(t, filepath.Join(dir, "raw.jsonl"))
	pride := readResults(t, filepath.Join(dir, "pride.jsonl"))
	require.Len(t, pride, 24)
	samples := 0
	for i := range pride {
		d := pride[i].Debias
		require.NotNil(t, d, "row %d", i)
		assert.Equal(t, debias.PriDe, d.Method)
		assert.Equal(t, raw[i].PromptSHA256, pride[i].PromptSHA256, "the prompt never changes")
		assert.Equal(t, raw[i].Chosen, d.RawChosen, "the raw choice is kept")
		for k := range raw[i].Options {
			assert.Equal(t, raw[i].Options[k].Probability, pride[i].Options[k].Probability)
		}
		if d.PriorSample {
			samples++
			assert.Len(t, d.Permutations, 7)
		} else {
			assert.Equal(t, p8, d.Prior)
		}
	}
	assert.Equal(t, 10, samples)

	// The run file records the prior; a second run reads the prior file and estimates nothing.
	meta, ok := loadRunMeta(filepath.Join(dir, "pride.jsonl.run.json"))
	require.True(t, ok)
	assert.Equal(t, p8, meta.Prior.ByOptions[8].Prior)
	assert.True(t, meta.Finished)
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "again.jsonl"), "--debias", "pride", "--prior", prior)...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "estimating")
	assert.Contains(t, stderr, "prior read from")
	again := readResults(t, filepath.Join(dir, "again.jsonl"))
	for i := range again {
		assert.False(t, again[i].Debias.PriorSample)
		assert.Equal(t, p8, again[i].Debias.Prior)
		if !pride[i].Debias.PriorSample {
			assert.Equal(t, pride[i].Debias.Probabilities, again[i].Debias.Probabilities, "row %d: same prior, same scores", i)
		}
	}

	// With no bias flag jev decide estimates the same prior from the same sample, keeps it in
	// the store, and decides as --debias pride did; a second run reads the store.
	store := t.TempDir()
	t.Setenv("GOJEV_PRIORS", store)
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "default.jsonl"))...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "estimating the letter prior from 10 rows")
	assert.Contains(t, stderr, "prior kept in "+store)
	for i, r := range readResults(t, filepath.Join(dir, "default.jsonl")) {
		require.NotNil(t, r.Debias, "row %d", i)
		assert.Equal(t, pride[i].Chosen, r.Chosen, "row %d", i)
		assert.Equal(t, pride[i].Debias.PriorSample, r.Debias.PriorSample, "row %d", i)
	}
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "default2.jsonl"))...)
	require.Equal(t, 0, code, stderr)
	assert.NotContains(t, stderr, "estimating")
	assert.Contains(t, stderr, "prior read from the stored priors")
	for i, r := range readResults(t, filepath.Join(dir, "default2.jsonl")) {
		assert.Equal(t, p8, r.Debias.Prior, "row %d: the stored prior", i)
	}

	// jev report reads both files: the PriDe run and its raw choices, side by side.
	code, stdout, stderr := jev(t, "", "report", filepath.Join(dir, "raw.jsonl"), filepath.Join(dir, "pride.jsonl")+"=PriDe",
		"--html", filepath.Join(dir, "r.html"), "--json", filepath.Join(dir, "r.json"))
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "PriDe (raw)")
	var rep report.Report
	b, err := os.ReadFile(filepath.Join(dir, "r.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &rep))
	require.Len(t, rep.Runs, 3)
	assert.Equal(t, rep.Runs[0].Correct, rep.Runs[2].Correct, "the raw choices of the PriDe run are the raw run's")
	assert.Equal(t, rep.Runs[0].Letters, rep.Runs[2].Letters)
	assert.Equal(t, "SmolLM2-135M-Instruct.Q4_1.gguf", rep.Runs[1].File)

	// A prior for another model or contract is refused.
	p.Model.SHA256 = strings.Repeat("0", 64)
	require.NoError(t, p.Save(prior))
	code, _, stderr = jev(t, "", withModel(t, "decide", "-i", rows, "-o", filepath.Join(dir, "x.jsonl"), "--debias", "pride", "--prior", prior)...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "estimated for another model")
}

func TestBiasFlagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--debias", "pride", "--contract", "binary"}, "binary contract has --debias contextual"},
		{[]string{"--debias", "contextual"}, "--contract binary"},
		{[]string{"--permute", "random"}, "want cyclic"},
		{[]string{"--permute", "cyclic", "--debias", "pride"}, "choose one"},
		{[]string{"--permute", "0"}, "a number of permutations, 1 to 16"},
		{[]string{"--permute", "17"}, "a number of permutations, 1 to 16"},
		{[]string{"--permute", "2", "--debias", "contextual", "--contract", "binary"}, "combines only with --debias pride"},
		{[]string{"--permute", "2", "--contract", "binary"}, "the binary contract has --debias contextual"},
		{[]string{"--abstain-below", "1.5"}, "want a probability in [0, 1]"},
		{[]string{"--calibration", "missing.json"}, "--calibration: open missing.json"},
		{[]string{"--prior", "p.json", "--debias", "none"}, "use it with --debias pride"},
		{[]string{"--debias", "none", "--permute", "2"}, "combines only with --debias pride"},
		{[]string{"--debias", "raw"}, "or none"},
		{[]string{"--knockout-grouping", "length"}, "add --many knockout"},
		{[]string{"--many", "all"}, "want binary, knockout or shortlist"},
		{[]string{"--debias", "pride", "--pride-sample", "0"}, "fraction in (0, 1]"},
		{[]string{"--format", "html"}, "want text or jsonl"},
		{[]string{"--score-reading", "reversed"}, "want both-orders or listed"},
	} {
		code, _, stderr := jev(t, "", append([]string{"decide", "-m", "x.gguf"}, tc.args...)...)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr, tc.want, "%v", tc.args)
	}
}

// TestTextFormat decides two rows with --format text: one readable line each, with the chosen
// option, its probability and a mark against the label.
func TestTextFormat(t *testing.T) {
	in := row("r1", 3) + "\n" + `{"id": "bad"}` + "\n"
	code, stdout, stderr := jev(t, in, withModel(t, "decide", "--format", "text")...)
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `^r1\s+o\d\s+p=0\.\d{3} \([ABC]\)\s+[✓✗]`, lines[0])
	assert.Regexp(t, `^bad\s+error \(line 2\): bad row: missing "state"`, lines[1])

	code, stdout, _ = jev(t, row("r1", 3)+"\n", withModel(t, "render", "--format", "text")...)
	require.Equal(t, 0, code)
	assert.Regexp(t, `^### r1  direct-options-v1  \d+ tokens  sha256 [0-9a-f]{64}\n<\|im_start\|>system\n`, stdout)
}

func TestVersionAndKwargsWarning(t *testing.T) {
	code, stdout, _ := jev(t, "", "--version")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "llama.cpp v0.4.0 (80fb11ac73e6)")
	assert.Contains(t, stdout, "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")

	code, _, stderr := jev(t, "", withModel(t, "check", "--chat-template-kwargs", `{"enable_thinking": "false"}`)...)
	assert.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "which a template reads as true")
}
