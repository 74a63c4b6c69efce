package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/testenv"
)

// buildJev builds the jev command into a temporary folder.
func buildJev(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "jev")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/jev")
	cmd.Dir = testenv.RepoRoot(t)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)
	return bin
}

// interruptRows is the input of the interruption tests: rows that decode quickly (most share
// one prompt, so only its last tokens are decoded again), a few distinct ones, bad rows,
// rows sharing an id and lines without an id.
func interruptRows(n int) []string {
	var lines []string
	for i := range n {
		switch {
		case i%10 == 3:
			lines = append(lines, fmt.Sprintf(`{"id": "bad-%d", "state": 1, "question": "q", "options": []}`, i))
		case i%10 == 6:
			lines = append(lines, `{"id": "broken", "state": `) // no readable id: null
		case i%10 == 8:
			lines = append(lines, row("twin", 2)) // the same id many times
		case i%25 == 0:
			lines = append(lines, strings.Replace(row(fmt.Sprintf("r%d", i), 3), "charged twice", fmt.Sprintf("charged %d times", i), 1))
		default:
			lines = append(lines, row(fmt.Sprintf("r%d", i), 2))
		}
	}
	return lines
}

// startDecide starts `jev decide` on in, writing out, and returns the running command.
func startDecide(t *testing.T, bin, in, out string, extra ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	args := append([]string{"decide"}, modelArgs(t)...)
	args = append(args, "-i", in, "-o", out)
	cmd := exec.Command(bin, append(args, extra...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	return cmd, &stderr
}

// waitForLines waits until path holds at least n newlines, or the command exits.
func waitForLines(t *testing.T, path string, n int, exited <-chan struct{}) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("jev finished before %d lines were written: the input is too short to interrupt", n)
		default:
		}
		data, _ := os.ReadFile(path)
		if bytes.Count(data, []byte{'\n'}) >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no %d lines in %s after 2 minutes", n, path)
}

// wholeRecords checks that data is whole JSON lines and returns their ids (as JSON).
func wholeRecords(t *testing.T, data []byte) []string {
	t.Helper()
	if len(data) == 0 {
		return nil
	}
	require.True(t, bytes.HasSuffix(data, []byte{'\n'}), "the output ends with a whole line: %q", data[max(0, len(data)-80):])
	var ids []string
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var rec struct {
			ID    json.RawMessage `json:"id"`
			Error string          `json:"error"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &rec), "output line %d: %s", i+1, line)
		ids = append(ids, string(rec.ID))
	}
	return ids
}

// inputIDs returns each input line's id as jev writes it.
func inputIDs(t *testing.T, lines []string) []string {
	var ids []string
	for _, l := range lines {
		var r struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal([]byte(l), &r) != nil || r.ID == nil {
			ids = append(ids, "null")
		} else {
			ids = append(ids, string(r.ID))
		}
	}
	return ids
}

// TestKilledRunResumes kills `jev decide` mid-way (SIGKILL, SIGTERM, SIGINT), checks that the
// output holds only whole lines, resumes it with --resume and checks that every input line
// then has exactly one output line, in input order.
func TestKilledRunResumes(t *testing.T) {
	bin := buildJev(t)
	lines := interruptRows(60)
	want := inputIDs(t, lines)
	for _, tc := range []struct {
		name   string
		signal syscall.Signal
		torn   bool // append a cut line, as a write cut short by a crash would leave
	}{
		{"kill -9, then a torn last line", syscall.SIGKILL, true},
		{"SIGTERM", syscall.SIGTERM, false},
		{"SIGINT", syscall.SIGINT, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			in, out := filepath.Join(dir, "rows.jsonl"), filepath.Join(dir, "out.jsonl")
			require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
			cmd, stderr := startDecide(t, bin, in, out)
			exited := make(chan struct{})
			var waitErr error
			var wg sync.WaitGroup
			wg.Go(func() { waitErr = cmd.Wait(); close(exited) })
			waitForLines(t, out, 15, exited)
			require.NoError(t, cmd.Process.Signal(tc.signal))
			wg.Wait()
			require.Error(t, waitErr, "an interrupted run does not exit 0")
			if tc.signal != syscall.SIGKILL {
				assert.Contains(t, stderr.String(), "--resume", "the message says how to continue")
				assert.Equal(t, 1, cmd.ProcessState.ExitCode(), stderr.String())
			}

			data, err := os.ReadFile(out)
			require.NoError(t, err)
			got := wholeRecords(t, data)
			require.GreaterOrEqual(t, len(got), 15)
			require.Less(t, len(got), len(lines), "interrupted before the end")
			assert.Equal(t, want[:len(got)], got, "the records written so far are the first rows, in order")
			const torn = `{"id":"r99","prompt_version":"direct-opt`
			if tc.torn {
				f, err := os.OpenFile(out, os.O_APPEND|os.O_WRONLY, 0)
				require.NoError(t, err)
				_, err = f.WriteString(torn)
				require.NoError(t, err)
				require.NoError(t, f.Close())
			}

			resumed, stderr2 := startDecide(t, bin, in, out, "--resume")
			require.NoError(t, resumed.Wait(), stderr2.String())
			assert.Contains(t, stderr2.String(), fmt.Sprintf("%d records kept", len(got)))
			assert.Contains(t, stderr2.String(), fmt.Sprintf("skipped %d already in the output", len(got)))
			if tc.torn {
				assert.Contains(t, stderr2.String(), fmt.Sprintf("a cut last line of %d bytes dropped", len(torn)))
			}
			data, err = os.ReadFile(out)
			require.NoError(t, err)
			final := wholeRecords(t, data)
			assert.Equal(t, want, final, "every input line has exactly one output line, in input order")
			t.Logf("%s after %d of %d lines; --resume wrote the other %d", tc.name, len(got), len(lines), len(final)-len(got))
		})
	}
}

// A record JSON cannot encode (NaN logits, as a damaged model may give) becomes an error
// record with the row's id, and the lines after it are still written.
func TestUnencodableRecordBecomesAnErrorRecord(t *testing.T) {
	var out bytes.Buffer
	nan := math.NaN()
	for i, id := range []string{"a", "b", "c"} {
		lineNo := i + 1
		dec := &gojev.Result{ID: json.RawMessage(strconv.Quote(id)), Chosen: "x"}
		if lineNo == 2 {
			dec.Options = []contract.OptionScore{{ID: "x", Logit: &nan, Logprob: nan, Probability: nan}}
		}
		out.Write(batch.RecordLine(lineNo, dec.ID, gojev.Outcome{Result: dec}))
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	var rec batch.ErrorRecord
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &rec))
	assert.Equal(t, `"b"`, string(rec.ID))
	assert.Equal(t, 2, rec.Line)
	assert.Contains(t, rec.Error, "cannot write the result")
	assert.Contains(t, lines[2], `"id":"c"`)
}

// TestResumeRefusesAnUnreadableRunFile: a run file that exists but cannot be read would skip
// the shard, model and flag checks a resume makes, so the resume is refused (it was silently
// ignored).
func TestResumeRefusesAnUnreadableRunFile(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.jsonl")
	require.NoError(t, os.WriteFile(out, []byte(`{"id":"a","line":1,"prompt_version":"direct-options-v1","chosen":"o0"}`+"\n"), 0o644))
	require.NoError(t, os.WriteFile(out+".run.json", []byte("{\"prompt_version\": \"direct-opt"), 0o644))
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(row("a", 2)+"\n"+row("b", 2)+"\n"), 0o644))
	code, _, stderr := jev(t, "", "decide", "--resume", "-m", "unused.gguf", "-i", in, "-o", out)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "unreadable run file")
	assert.Contains(t, stderr, "cannot check")
}
