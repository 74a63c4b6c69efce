package batch_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gojev/gojev/batch"
)

// namesALine: a rejection of a line-based file says which line.
var namesALine = regexp.MustCompile(`line \d+`)

func seedFile(f *testing.F, name string) []byte {
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzReadEntries: any bytes as a results file either read as entries (each a decision or an
// error record, numbered by its line) or give an error that names the offending line; never a
// panic. Seeded with real records of the default model and their variants.
func FuzzReadEntries(f *testing.F) {
	real := seedFile(f, "records.jsonl")
	f.Add(real)
	f.Add(real[:len(real)/2]) // cut short
	f.Add([]byte("{\"id\":\"a\",\"line\":1,\"error\":\"x\"}\n\n{\"prompt_version\":\"direct-options-v1\",\"line\":2}\n"))
	f.Add([]byte("hello\n"))
	f.Add([]byte("{\"prompt_version\": 3}\n"))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, cut, err := batch.ReadEntries(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, batch.ErrNotRecord) || !namesALine.MatchString(err.Error()) {
				t.Fatalf("a rejection must wrap ErrNotRecord and name the line: %v", err)
			}
			return
		}
		if cut < 0 || cut > len(data) {
			t.Fatalf("cut %d of %d bytes", cut, len(data))
		}
		for _, e := range entries {
			if (e.Record == nil) == (e.Error == nil) {
				t.Fatalf("line %d: exactly one of a decision and an error record", e.N)
			}
			_ = e.InputLine()
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			_, _ = batch.ParseHead(l) // the resume and merge reader of a record's line and id
		}
	})
}

// FuzzReadRunFile: any bytes as a run file read as one, or give an error wrapping ErrRunFile
// that names the file; never a panic; a run file read back compares with itself as agreeing.
func FuzzReadRunFile(f *testing.F) {
	f.Add(seedFile(f, "records.jsonl.run.json"))
	f.Add([]byte(`{"shard": "1/4", "prompt_version": "direct-options-v1", "knockout": {"Grouping": "file"}}`))
	f.Add([]byte(`{"prior": {"priors": {"8": {"prior": [1]}}}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "out.jsonl.run.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := batch.ReadRunFile(path)
		if err != nil {
			if !errors.Is(err, batch.ErrRunFile) || !strings.Contains(err.Error(), path) {
				t.Fatalf("a rejection must wrap ErrRunFile and name the file: %v", err)
			}
			return
		}
		if d := m.Disagrees(m); d != "" {
			t.Fatalf("a run file disagrees with itself on %s", d)
		}
	})
}

// FuzzMergePart: any bytes as one of two merge parts are merged, refused with Problems, or
// rejected with an error that names the part and its line; never a panic, and nothing written
// unless every check passed.
func FuzzMergePart(f *testing.F) {
	rows := seedFile(f, "rows.jsonl")
	f.Add([]byte(`{"id":"banking77-7-00001","line":2,"prompt_version":"direct-options-v1","chosen":"x"}` + "\n"))
	f.Add([]byte(`{"id":"banking77-7-00001","line":2,"error":"bad row"}` + "\n" + `{"id":"x","line":9,"error":"e"}` + "\n"))
	f.Add([]byte(`{"id":"banking77-7-00001","line":2`))
	f.Add([]byte("not json\n"))
	f.Add([]byte(`{"id":null,"line":0,"error":"e"}` + "\n"))
	f.Fuzz(func(t *testing.T, part []byte) {
		dir := t.TempDir()
		in := filepath.Join(dir, "rows.jsonl")
		first := filepath.Join(dir, "part-0.jsonl")
		second := filepath.Join(dir, "part-1.jsonl")
		// Lines 1 and 3 are shard 0/2's; the fuzzed part stands for shard 1/2 (line 2).
		good := `{"id":"banking77-7-00000","line":1,"prompt_version":"direct-options-v1","chosen":"a"}` + "\n" +
			`{"id":"banking77-7-00002","line":3,"prompt_version":"direct-options-v1","chosen":"b"}` + "\n"
		for p, b := range map[string][]byte{in: rows, first: []byte(good), second: part} {
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var out bytes.Buffer
		m, problems, err := batch.Merge(in, []string{first, second}, &out)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), "part-1.jsonl") || !namesALine.MatchString(err.Error()) {
				t.Fatalf("a rejection must name the part and its line: %v", err)
			}
			if out.Len() > 0 {
				t.Fatal("written despite an error")
			}
		case len(problems) > 0:
			if out.Len() > 0 {
				t.Fatal("written despite problems")
			}
			for _, p := range problems {
				if p.Kind == "" || p.Detail == "" {
					t.Fatalf("a problem without kind or detail: %+v", p)
				}
			}
		default:
			if m.Summary.Rows != 3 || bytes.Count(out.Bytes(), []byte("\n")) != 3 {
				t.Fatalf("a clean merge of 3 input lines wrote %d records: %q", m.Summary.Rows, out.String())
			}
		}
	})
}
