package main

import (
	"bytes"
	"context"
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
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/testenv"
)

func TestOpenResume(t *testing.T) {
	dec := `{"id":"a","chosen":"x"}` + "\n"
	errRec := `{"id":"b","line":2,"error":"bad row: missing \"state\""}` + "\n"
	noID := `{"id":null,"line":3,"error":"bad row: invalid JSON"}` + "\n"
	num := `{"id":7,"chosen":"x"}` + "\n"
	lined := `{"id":"d","chosen":"x","line":9}` + "\n"
	for _, tc := range []struct {
		name    string
		content string
		keep    string // the file after openResume
		records int
		byID    map[string]int // records without a line number (files of older jev versions)
		byLine  map[int]string
		wantErr string
	}{
		{"empty", "", "", 0, map[string]int{}, map[int]string{}, ""},
		{"whole lines", dec + errRec + noID + num + lined, dec + errRec + noID + num + lined, 5,
			map[string]int{"sa": 1, "n7": 1}, map[int]string{2: "sb", 3: "line 3", 9: "sd"}, ""},
		{"cut last line", dec + errRec + `{"id":"c","prompt_ver`, dec + errRec, 2, map[string]int{"sa": 1}, map[int]string{2: "sb"}, ""},
		{"cut inside the first line", `{"id":"a","cho`, "", 0, map[string]int{}, map[int]string{}, ""},
		{"an id twice", dec + dec, dec + dec, 2, map[string]int{"sa": 2}, map[int]string{}, ""},
		{"not a record", dec + "hello\n", "", 0, nil, nil, "line 2 is not a jev decide record"},
		{"a record without an id", `{"chosen":"x"}` + "\n", "", 0, nil, nil, "line 1 is not a jev decide record"},
		{"no id, no line", `{"id":null,"error":"x"}` + "\n", "", 0, nil, nil, "neither an id nor a line number"},
		{"two records of one line", lined + lined, "", 0, nil, nil, "line 2 is a second record for input line 9"},
		{"a torn write of NUL bytes", dec + "\x00\x00\x00", dec, 1, map[string]int{"sa": 1}, map[int]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.jsonl")
			require.NoError(t, os.WriteFile(path, []byte(tc.content), 0o644))
			f, set, err := openResume(path)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				data, rerr := os.ReadFile(path)
				require.NoError(t, rerr)
				assert.Equal(t, tc.content, string(data), "a file that is refused is left as it was")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.records, set.Records)
			assert.Equal(t, len(tc.content)-len(tc.keep), set.Dropped)
			assert.Equal(t, tc.byID, set.byID)
			assert.Equal(t, tc.byLine, set.byLine)
			_, err = f.WriteString(`{"id":"new"}` + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.keep+`{"id":"new"}`+"\n", string(data), "appended after the kept records")
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.jsonl")
		f, set, err := openResume(path)
		require.NoError(t, err)
		assert.Zero(t, set.Records)
		require.NoError(t, f.Close())
	})
}

func TestResumeSkipsTheRowsAlreadyDone(t *testing.T) {
	set := &resumeSet{byID: map[string]int{"sa": 1, "sdup": 1, "n5": 1}, byLine: map[int]string{4: "line 4", 10: "sx", 11: "sy"}}
	for _, tc := range []struct {
		line   string
		lineNo int
		skip   bool
	}{
		{`{"id": "x"}`, 10, true}, // a record naming line 10 and its id
		{`{"id": "a", "state": 1}`, 1, true},
		{`{"id": "a", "state": 1}`, 2, false}, // the file held one "a": the second is new
		{`{"id": "dup"}`, 3, true},
		{`{"id": `, 4, true},  // no readable id: matched by line number
		{`{"id": `, 6, false}, // another line without an id
		{`{"id": 5}`, 7, true},
		{`{"id": "5"}`, 8, false}, // the string "5" is not the number 5
		{`{"id": "b"}`, 9, false},
	} {
		skip, err := set.skip([]byte(tc.line), tc.lineNo)
		require.NoError(t, err)
		assert.Equal(t, tc.skip, skip, "line %d %s", tc.lineNo, tc.line)
	}
	// The record of line 11 names id "y": an input whose line 11 is "z" is another input.
	_, err := set.skip([]byte(`{"id": "z"}`), 11)
	require.ErrorIs(t, err, errNotThisInput)
	assert.ErrorContains(t, err, `its record for line 11 has id "y", the input's line 11 has "z"`)
}

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
	err := eachLine(context.Background(), strings.NewReader("a\nb\nc\n"), &out, newLineEncoder().encode, func(line []byte, lineNo int) (any, error) {
		dec := &gojev.Result{ID: json.RawMessage(strconv.Quote(string(line))), Chosen: "x"}
		if lineNo == 2 {
			dec.Options = []contract.OptionScore{{ID: "x", Logit: &nan, Logprob: nan, Probability: nan}}
		}
		return dec, nil
	})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 3)
	var rec errorRecord
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
