package batch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
)

// row is a JSONL row with n options o0..o(n-1).
func row(id string, n int) string {
	var opts []string
	for i := range n {
		opts = append(opts, fmt.Sprintf(`{"id": "o%d", "description": "Option %d."}`, i, i))
	}
	return fmt.Sprintf(`{"id": %q, "state": {"message": "hello"}, "question": "Which?", "options": [%s]}`, id, strings.Join(opts, ", "))
}

// firstOption decides every row by choosing its first option, without a model.
func firstOption(_ context.Context, row contract.Row, _ int) (*gojev.Result, error) {
	return &gojev.Result{ID: row.IDJSON(), PromptVersion: contract.PromptVersion, Chosen: row.Options[0].ID}, nil
}

// now is a beginFunc that does all of f's work in the wait.
func now(f func(context.Context, contract.Row, int) (*gojev.Result, error)) beginFunc {
	return func(ctx context.Context, row contract.Row, n int) (func() (*gojev.Result, error), error) {
		return func() (*gojev.Result, error) { return f(ctx, row, n) }, nil
	}
}

// TestRunBeginsRowsInInputOrder: rows are begun one at a time in input order, so the
// Decider's scheduler (oldest first) decodes the first row first, however the lines' goroutines
// are scheduled: here the first line's begin is slow and the others' are instant, and the
// second waits for it. The waits still overlap.
func TestRunBeginsRowsInInputOrder(t *testing.T) {
	var in strings.Builder
	for i := 1; i <= 8; i++ {
		in.WriteString(row(fmt.Sprint(i), 2) + "\n")
	}
	var mu sync.Mutex
	var order []int
	active, most := 0, 0
	begin := func(ctx context.Context, row contract.Row, n int) (func() (*gojev.Result, error), error) {
		if n == 1 {
			time.Sleep(50 * time.Millisecond)
		}
		mu.Lock()
		order = append(order, n)
		mu.Unlock()
		return func() (*gojev.Result, error) {
			mu.Lock()
			active++
			most = max(most, active)
			mu.Unlock()
			time.Sleep(100 * time.Millisecond)
			mu.Lock()
			active--
			mu.Unlock()
			return firstOption(ctx, row, n)
		}, nil
	}
	var out bytes.Buffer
	sum, err := run(context.Background(), starter{row: begin}, strings.NewReader(in.String()), &out, Config{Window: 8})
	require.NoError(t, err)
	assert.Equal(t, 8, sum.Decided)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, order)
	assert.Greater(t, most, 1, "the waits overlap")
}

// run writes the records of its shard's lines only, each naming its line, and stops
// when resuming finds a record of another row.
func TestRunDecidesItsShard(t *testing.T) {
	var in strings.Builder
	for i := 1; i <= 7; i++ {
		if i == 5 {
			in.WriteString("{\"id\": \n") // unreadable: still shard 1's line 5
			continue
		}
		in.WriteString(row(fmt.Sprintf("r%d", i), 2) + "\n")
	}
	var out bytes.Buffer
	sum, err := run(context.Background(), starter{row: now(firstOption)}, strings.NewReader(in.String()), &out, Config{Shard: Shard{I: 1, N: 3}, Window: 4})
	require.NoError(t, err)
	assert.Equal(t, `{"id":"r2","prompt_version":"direct-options-v1","n_prompt_tokens":0,"chosen":"o0","probability":0,"backend":"","renderer":"","template_date":"","ms":0,"stats":{"prompt_tokens":0,"decoded_tokens":0,"queue_ms":0},"line":2}`+"\n"+
		`{"id":null,"line":5,"error":"bad row: invalid JSON at byte 6: unexpected end of input, expecting a value"}`+"\n", out.String())
	assert.Equal(t, 2, sum.Rows)
	assert.Equal(t, 1, sum.Errors)

	set := &Resume{byLine: map[int]string{2: "sr2", 5: "sr9"}, byID: map[string]int{}}
	out.Reset()
	_, err = run(context.Background(), starter{row: now(firstOption)}, strings.NewReader(in.String()), &out, Config{Shard: Shard{I: 1, N: 3}, Window: 4, Skip: set.Skip})
	require.ErrorIs(t, err, ErrNotThisInput)
	assert.Empty(t, out.String(), "line 2 was done; line 5's record names another row: nothing written")
}

// Two runs cannot write one results file, but /dev/null takes any number of writers.
func TestOpenLockedLocksOnlyRegularFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.jsonl")
	f, err := openLocked(path)
	require.NoError(t, err)
	_, err = openLocked(path)
	require.ErrorIs(t, err, ErrBusy)
	require.NoError(t, f.Close())
	g, err := openLocked(path)
	require.NoError(t, err, "free again once the first writer closed it")
	require.NoError(t, g.Close())

	a, err := openLocked(os.DevNull)
	require.NoError(t, err)
	defer a.Close()
	b, err := openLocked(os.DevNull)
	require.NoError(t, err, "a second -o /dev/null")
	require.NoError(t, b.Close())
}

func TestOpenResume(t *testing.T) {
	dec := `{"id":"a","chosen":"x"}` + "\n"
	errRec := `{"id":"b","line":2,"error":"bad row: missing \"state\""}` + "\n"
	noID := `{"id":null,"line":3,"error":"bad row: invalid JSON"}` + "\n"
	num := `{"id":7,"chosen":"x"}` + "\n"
	lined := `{"id":"d","chosen":"x","line":9}` + "\n"
	for _, tc := range []struct {
		name    string
		content string
		keep    string // the file after OpenResume
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
			set, err := OpenResume(path)
			f := set
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
			_, err = f.Write([]byte(`{"id":"new"}` + "\n"))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.Equal(t, tc.keep+`{"id":"new"}`+"\n", string(data), "appended after the kept records")
		})
	}
	t.Run("missing file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "new.jsonl")
		set, err := OpenResume(path)
		f := set
		require.NoError(t, err)
		assert.Zero(t, set.Records)
		require.NoError(t, f.Close())
	})
}

func TestResumeSkipsTheRowsAlreadyDone(t *testing.T) {
	set := &Resume{byID: map[string]int{"sa": 1, "sdup": 1, "n5": 1}, byLine: map[int]string{4: "line 4", 10: "sx", 11: "sy"}}
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
		skip, err := set.Skip([]byte(tc.line), tc.lineNo)
		require.NoError(t, err)
		assert.Equal(t, tc.skip, skip, "line %d %s", tc.lineNo, tc.line)
	}
	// The record of line 11 names id "y": an input whose line 11 is "z" is another input.
	_, err := set.Skip([]byte(`{"id": "z"}`), 11)
	require.ErrorIs(t, err, ErrNotThisInput)
	assert.ErrorContains(t, err, `its record for line 11 has id "y", the input's line 11 has "z"`)
}

// Start.Rows counts the lines of the run's shard in a regular file, and rewinds it.
func TestStartRowsCountsTheShard(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rows.jsonl")
	require.NoError(t, os.WriteFile(path, []byte("a\nb\nc\nd\ne\nf\ng"), 0o644)) // 7 lines, the last without its newline
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	for _, tc := range []struct {
		shard Shard
		want  int
	}{{Shard{}, 7}, {Shard{I: 1, N: 3}, 2}, {Shard{I: 0, N: 3}, 3}, {Shard{I: 7, N: 8}, 0}} {
		n, ok := Start{in: f, shard: tc.shard}.Rows()
		assert.True(t, ok)
		assert.Equal(t, tc.want, n, "%s", tc.shard)
		pos, err := f.Seek(0, io.SeekCurrent)
		require.NoError(t, err)
		assert.Zero(t, pos, "rewound")
	}
	_, ok := Start{in: strings.NewReader("a\n")}.Rows()
	assert.False(t, ok, "not a file")
}

// Skewed: one letter with 80 % of at least 20 lettered choices.
func TestSummarySkewed(t *testing.T) {
	for _, tc := range []struct {
		a, b   int
		skewed bool
	}{{16, 4, true}, {15, 4, false}, {15, 5, false}, {19, 0, false}, {20, 0, true}} {
		s := Summary{Letters: map[string]int{"A": tc.a, "B": tc.b}, Lettered: tc.a + tc.b}
		letter, n, skewed := s.Skewed()
		assert.Equal(t, tc.skewed, skewed, "%d A, %d B", tc.a, tc.b)
		assert.Equal(t, [2]any{"A", tc.a}, [2]any{letter, n})
	}
}
