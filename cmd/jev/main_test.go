package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

func jev(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func modelArgs(t *testing.T) []string {
	return []string{"-m", testenv.SmallModel(t), "-t", "2"}
}

func TestUsage(t *testing.T) {
	code, _, stderr := jev(t, "")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "jev decide [-i rows.jsonl] [-o out.jsonl]")
	code, stdout, _ := jev(t, "", "help")
	assert.Equal(t, 0, code)
	assert.Contains(t, stdout, "Usage:")
	code, _, stderr = jev(t, "", "decide", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "--chat-template-kwargs")
	assert.Contains(t, stderr, "n_ctx")
	assert.Contains(t, stderr, "--resume continues an interrupted run")
	assert.Contains(t, stderr, "  --resume\n")
	assert.Contains(t, stderr, "  --shard I/N\n")
	code, _, stderr = jev(t, "", "decide", "--resume", "-m", "x.gguf")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "--resume needs the results file")
	code, _, stderr = jev(t, "", "merge", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, stderr, "missing rows")
	code, _, stderr = jev(t, "", "merge", "a.jsonl")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "-i rows.jsonl: name the input")
	code, _, stderr = jev(t, "", "decide", "--no-such-flag")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "no-such-flag")
	code, _, stderr = jev(t, "", "frobnicate")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, `unknown command "frobnicate"`)
	code, _, stderr = jev(t, "", "check", "-m", filepath.Join(t.TempDir(), "missing.gguf"))
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "missing.gguf")
	code, _, stderr = jev(t, "", "check", "-m", "x.gguf", "--chat-template-kwargs", "[1]")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "must be a JSON object")
}

func row(id string, nOptions int) string {
	opts := make([]string, nOptions)
	for i := range opts {
		opts[i] = fmt.Sprintf(`{"id": "o%d", "description": "Option number %d."}`, i, i)
	}
	return fmt.Sprintf(`{"id": %q, "state": {"message": "I was charged twice."}, "question": "Which option?", "options": [%s], "label": "o0"}`, id, strings.Join(opts, ", "))
}

// A file with a 257-option row, a malformed line, duplicate option ids and a blank line yields
// error records for those and decisions for the rest (a 17-option row among them, decided in
// passes), one output line per input line, in order.
func TestDecideGoesOnPastBadRows(t *testing.T) {
	lines := []string{
		row("good-1", 3),
		row("too-many", 257),
		`{"id": "broken", "state": `,
		`{"id": "dupes", "state": 1, "question": "q", "options": [{"id": "a", "description": ""}, {"id": "a", "description": ""}]}`,
		``,
		row("none", 0),
		row("good-2", 16),
		row("good-17", 17),
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	out := filepath.Join(dir, "out.jsonl")
	args := append([]string{"decide"}, modelArgs(t)...)
	code, _, stderr := jev(t, "", append(args, "-i", in, "-o", out)...)
	require.Equal(t, 0, code, stderr)

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	got := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, got, len(lines))
	type rec struct {
		ID           json.RawMessage   `json:"id"`
		Error        string            `json:"error"`
		Line         int               `json:"line"`
		Chosen       string            `json:"chosen"`
		PromptSHA256 string            `json:"prompt_sha256"`
		Options      []json.RawMessage `json:"options"`
		Candidates   []json.RawMessage `json:"candidates"`
	}
	wantErr := []string{"", "at most 256 options", "bad row", "duplicate option id", "empty line", "at least one option", "", ""}
	wantID := []string{`"good-1"`, `"too-many"`, `null`, `"dupes"`, `null`, `"none"`, `"good-2"`, `"good-17"`}
	for i, line := range got {
		var r rec
		require.NoError(t, json.Unmarshal([]byte(line), &r), line)
		assert.Equal(t, wantID[i], string(r.ID), "line %d", i+1)
		switch {
		case wantErr[i] == "" && wantID[i] == `"good-17"`:
			assert.Empty(t, r.Error)
			assert.NotEmpty(t, r.Chosen)
			assert.Len(t, r.Candidates, 16, "more than 16 options: the shortlist's 16 best, one binary prompt each")
		case wantErr[i] == "":
			assert.Empty(t, r.Error, "line %d", i+1)
			assert.NotEmpty(t, r.Chosen)
			assert.Len(t, r.PromptSHA256, 64)
		default:
			assert.Contains(t, r.Error, wantErr[i], "line %d", i+1)
			assert.Equal(t, i+1, r.Line)
		}
	}
	assert.Contains(t, stderr, "rows 8, decided 3, errors 5")
	assert.Contains(t, stderr, "accuracy")
	assert.Contains(t, stderr, "decisions/s")
}

func TestRenderPrintsThePromptAndItsHash(t *testing.T) {
	args := append([]string{"render"}, modelArgs(t)...)
	code, stdout, stderr := jev(t, row("r1", 2)+"\n", args...)
	require.Equal(t, 0, code, stderr)
	var r struct {
		ID            string `json:"id"`
		PromptSHA256  string `json:"prompt_sha256"`
		NPromptTokens int    `json:"n_prompt_tokens"`
		Prompt        string `json:"prompt"`
	}
	require.NoError(t, json.Unmarshal([]byte(stdout), &r))
	sum := sha256.Sum256([]byte(r.Prompt))
	assert.Equal(t, hex.EncodeToString(sum[:]), r.PromptSHA256)
	assert.Equal(t, "r1", r.ID)
	assert.Greater(t, r.NPromptTokens, 50)
	assert.Contains(t, r.Prompt, `{"letter": "B", "description": "Option number 1."}`)
}

func TestCheckPrintsTheSlots(t *testing.T) {
	args := append([]string{"check"}, modelArgs(t)...)
	code, stdout, stderr := jev(t, "", args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, `A=`)
	assert.Contains(t, stdout, `P=`)
	assert.Contains(t, stdout, "boundary         ok")
	assert.Contains(t, stdout, "template_sha256")
	assert.Regexp(t, `devices +CPU  .+ \(CPU\), CPU backend, [0-9.]+ GiB memory`, stdout)
	assert.Contains(t, stdout, "decides on       CPU (no GPU device: --plugin loads")
	assert.Contains(t, stdout, "decode           one-sequence (one prompt per llama_decode, exact")
}

// TestAFailedStartLeavesTheResultsFile: a run that cannot start (a bad flag value, a missing
// model or plugin) leaves an earlier results file at -o as it was.
func TestAFailedStartLeavesTheResultsFile(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out.jsonl")
	const before = "{\"id\":\"kept\"}\n"
	rows := filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl")
	for _, args := range [][]string{
		{"--decode", "bogus", "-m", "/nonexistent.gguf"},
		{"-m", "/nonexistent.gguf"},
		{"--plugin", "/nonexistent/libggml-vulkan.so", "-m", "/nonexistent.gguf"},
	} {
		require.NoError(t, os.WriteFile(out, []byte(before), 0o644))
		code, _, stderr := jev(t, "", append([]string{"decide", "-i", rows, "-o", out}, args...)...)
		assert.NotEqual(t, 0, code, "%v", args)
		assert.NotEmpty(t, stderr)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		assert.Equal(t, before, string(got), "%v: the earlier results are kept", args)

		// A run that cannot start leaves no new file behind.
		fresh := filepath.Join(t.TempDir(), "sub", "new.jsonl")
		code, _, _ = jev(t, "", append([]string{"decide", "-i", rows, "-o", fresh}, args...)...)
		assert.NotEqual(t, 0, code, "%v", args)
		assert.NoFileExists(t, fresh, "%v", args)
	}
}

func TestDecidingDevice(t *testing.T) {
	cpu := llama.Device{Name: "CPU", Type: llama.DeviceCPU, Backend: "CPU"}
	gpu := llama.Device{Name: "CUDA0", Type: llama.DeviceGPU, Backend: "CUDA"}
	igpu := llama.Device{Name: "Vulkan0", Type: llama.DeviceIGPU, Backend: "Vulkan"}
	for _, tc := range []struct {
		devs    []llama.Device
		ngl     int
		plugins int
		want    string
	}{
		{[]llama.Device{cpu}, -1, 0, "CPU (no GPU device: --plugin loads"},
		{[]llama.Device{cpu}, -1, 1, "CPU (the plugin loaded but found no GPU device"},
		{[]llama.Device{gpu, cpu}, -1, 1, "CUDA0 (-ngl -1: every layer offloaded)"},
		{[]llama.Device{gpu, igpu, cpu}, -1, 2, "CUDA0, Vulkan0 (-ngl -1"},
		{[]llama.Device{gpu, cpu}, 0, 1, "CPU (-ngl 0: no layer offloaded to CUDA0)"},
		{[]llama.Device{igpu, cpu}, 12, 1, "Vulkan0 and the CPU (-ngl 12: that many layers offloaded"},
	} {
		assert.Contains(t, decidingDevice(tc.devs, tc.ngl, tc.plugins), tc.want)
	}
}

// TestParallelRunsShareNoFlagState: jev's commands can run from many goroutines at once (a
// program embedding them, or tests in parallel). The flags' help lived in a package-wide map
// keyed by FlagSet, written by every parse without a lock: parallel parses raced (and the Go
// runtime can abort on concurrent map writes), and it grew with every parse.
func TestParallelRunsShareNoFlagState(t *testing.T) {
	var wg sync.WaitGroup
	outs := make([]string, 64)
	for i := range outs {
		wg.Go(func() {
			cmd := []string{"decide", "report", "calibrate", "redteam"}[i%4]
			_, _, stderr := jev(t, "", cmd, "-h")
			outs[i] = stderr
		})
	}
	wg.Wait()
	for i, o := range outs {
		assert.Equal(t, outs[i%4], o, "run %d printed the same help as run %d", i, i%4)
		assert.Equal(t, 1, strings.Count(o, "Flags:\n"), "run %d", i)
	}
	assert.Contains(t, outs[3], "  --seed seed\n", "flags defined with Func are listed too")
}
