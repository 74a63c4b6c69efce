package batch_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/internal/version"
)

// writeRows writes n rows of k options (ids r1..rn) and returns the file's path.
func writeRows(t *testing.T, dir string, n, k int) string {
	t.Helper()
	var b strings.Builder
	for i := 1; i <= n; i++ {
		b.WriteString(rowLine(fmt.Sprintf("r%d", i), k) + "\n")
	}
	path := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// openSmall opens the small model for a Job.
func openSmall(t *testing.T) func(context.Context, gojev.Options) (*gojev.Decider, error) {
	model := testenv.SmallModel(t)
	return func(ctx context.Context, o gojev.Options) (*gojev.Decider, error) {
		o.Runtime.NThreads = 2
		return gojev.Open(ctx, model, o)
	}
}

// What Job.Run refuses before it opens the model (a SetupError naming the Job field), leaving
// the results file as it was.
func TestJobRefusesBeforeOpening(t *testing.T) {
	dir := t.TempDir()
	rows := writeRows(t, dir, 4, 2)
	record := `{"id":"r1","line":1,"prompt_version":"direct-options-v1","chosen":"o0"}` + "\n"
	file := func(name, text, runFile string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		if runFile != "" {
			require.NoError(t, os.WriteFile(batch.RunFilePath(p), []byte(runFile), 0o644))
		}
		return p
	}
	busy := filepath.Join(dir, "busy.jsonl")
	held, err := batch.OpenResume(busy) // locked, as a run writing it holds it
	require.NoError(t, err)
	defer held.Close()
	for _, tc := range []struct {
		name  string
		job   batch.Job
		field string
		want  string
		is    error
	}{
		{"resuming without a results file", batch.Job{Resume: true}, "Resume", "needs its results file", nil},
		{"an unreadable run file", batch.Job{Resume: true, Output: file("torn.jsonl", record, `{"prompt_version": "dir`)},
			"Resume", "so the run cannot check that it continues them alike", batch.ErrRunFile},
		{"a run file of another shard count", batch.Job{Resume: true, Shard: batch.Shard{I: 2, N: 4}, Output: file("rerun.jsonl", "", `{"shard":"0/1"}`)},
			"Resume", "its run file says it holds shard 0/1, and this run is shard 2/4", nil},
		{"records of another shard", batch.Job{Resume: true, Shard: batch.Shard{I: 1, N: 2}, Output: file("part-0.jsonl", record, "")},
			"Resume", "it holds a record of input line 1, which is shard 0/2's, not this shard's (1/2)", nil},
		{"a file another run is writing", batch.Job{Output: busy}, "Output", "another process is writing this file", batch.ErrBusy},
		{"resuming a file another run is writing", batch.Job{Output: busy, Resume: true}, "Resume", "another process is writing this file", batch.ErrBusy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before []byte
			if tc.job.Output != "" {
				before, _ = os.ReadFile(tc.job.Output)
			}
			tc.job.Input = rows
			tc.job.Open = func(context.Context, gojev.Options) (*gojev.Decider, error) {
				t.Error("Open was called")
				return nil, context.Canceled
			}
			_, err := tc.job.Run(context.Background())
			var se *batch.SetupError
			require.ErrorAs(t, err, &se)
			assert.Equal(t, tc.field, se.Field)
			assert.ErrorContains(t, err, tc.want)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			if tc.job.Output != "" {
				after, _ := os.ReadFile(tc.job.Output)
				assert.Equal(t, before, after, "the results file is as it was")
			}
		})
	}
}

// A Job writes its records and run file; a resumed Job of other settings is refused, one of
// the same settings keeps the records and decides the rest.
func TestJobRunsAndResumes(t *testing.T) {
	open := openSmall(t)
	dir := t.TempDir()
	rows := writeRows(t, dir, 6, 3)
	out := filepath.Join(dir, "out.jsonl")
	job := batch.Job{Input: rows, Output: out, Open: open, RunFile: batch.RunFile{Jev: "test", Args: []string{"decide"}}}
	var starts []batch.Start
	var rowsAtStart []int
	job.OnStart = func(s batch.Start) {
		starts = append(starts, s)
		n, ok := s.Rows()
		assert.True(t, ok)
		rowsAtStart = append(rowsAtStart, n)
	}
	sum, err := job.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 6, sum.Decided)
	assert.Positive(t, sum.Elapsed)
	require.Len(t, starts, 1)
	assert.Nil(t, starts[0].Resume, "a new run")
	assert.Equal(t, []int{6}, rowsAtStart)
	meta, err := batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Equal(t, "test", meta.Jev, "the caller's fields are kept")
	assert.Equal(t, version.LlamaCpp(), meta.LlamaCpp, "an empty version is filled in")
	assert.Equal(t, []string{"decide"}, meta.Args)
	assert.Equal(t, rows, meta.Input)
	assert.Equal(t, "direct-options-v1", meta.PromptVersion)
	assert.Equal(t, "in-process", meta.Backend)
	assert.Equal(t, []string{"CPU"}, meta.Devices, "no plugin: the CPU decides")
	assert.Equal(t, filepath.Base(testenv.SmallModel(t)), meta.Model.File)
	assert.Len(t, meta.Model.SHA256, 64)
	assert.True(t, meta.Finished)
	assert.Equal(t, [4]int{6, 6, 0, 0}, [4]int{meta.Rows, meta.Decided, meta.Errors, meta.Skipped})
	assert.Nil(t, meta.Prior)
	assert.Equal(t, &gojev.KnockoutOptions{Method: gojev.ManyShortlist, Grouping: "shuffle", Shortlist: gojev.DefaultShortlist}, meta.Knockout,
		"the default scheme for rows of more than 16 options, settled for the in-process runtime")
	assert.Equal(t, [2]int{1, 6}, [2]int{meta.Invocations, meta.DecidedAll})
	assert.Equal(t, meta.ElapsedS, meta.ElapsedAllS)
	first := meta

	// As if killed after two records.
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	lines := strings.SplitAfter(string(data), "\n")
	require.NoError(t, os.WriteFile(out, []byte(lines[0]+lines[1]), 0o644))

	other := job
	other.Resume, other.Options = true, gojev.Options{Debias: debias.Cyclic}
	_, err = other.Run(context.Background())
	var se *batch.SetupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "Resume", se.Field)
	assert.ErrorContains(t, err, "this run has different bias control (--debias, --permute) than the run that wrote it")
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, lines[0]+lines[1], string(after), "a refused resume appends nothing")

	// A run file that records no scheme was decided under the binary contract (the default
	// before the shortlist): a resume with the default options keeps it, one that asks for
	// the shortlist is refused.
	old := *first
	old.Knockout = nil
	require.NoError(t, old.Save(batch.RunFilePath(out)))
	other.Options = gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyShortlist}}
	_, err = other.Run(context.Background())
	assert.ErrorContains(t, err, "this run has different schemes for rows of more than 16 options")
	starts = nil
	job.Resume = true
	_, err = job.Run(context.Background())
	require.NoError(t, err)
	meta, err = batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Nil(t, meta.Knockout, "the resumed run keeps the binary contract its run file implies")
	require.NoError(t, os.WriteFile(out, []byte(lines[0]+lines[1]), 0o644))
	require.NoError(t, first.Save(batch.RunFilePath(out)))

	starts = nil
	job.Resume = true
	sum, err = job.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 4}, [2]int{sum.Skipped, sum.Decided})
	require.Len(t, starts, 1)
	require.NotNil(t, starts[0].Resume)
	assert.Equal(t, 2, starts[0].Resume.Records)
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, inputLines(t, out))
	meta, err = batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Equal(t, [2]int{4, 2}, [2]int{meta.Decided, meta.Skipped}, "the run file counts what this run did")
	assert.Equal(t, [2]int{2, 6}, [2]int{meta.Invocations, meta.DecidedAll}, "and the file's totals: the 2 records kept and the 4 decided now")
	assert.InDelta(t, first.ElapsedS+meta.ElapsedS, meta.ElapsedAllS, 1e-9)
	assert.InDelta(t, 6/meta.ElapsedAllS, meta.Throughput(), 1e-9)

	// Resuming the finished file again decides nothing and leaves its run file as it was.
	sum, err = job.Run(context.Background())
	require.NoError(t, err)
	assert.Equal(t, [2]int{6, 0}, [2]int{sum.Skipped, sum.Decided})
	again, err := batch.ReadRunFile(batch.RunFilePath(out))
	require.NoError(t, err)
	assert.Equal(t, meta, again, "a no-op resume keeps the run file of the run that decided")
}

// PriDe's prior through a Job: estimated on the sample and saved to PriorFile (the sample rows
// keep their permutation-averaged decisions); read back from the file by a second Job that
// only wants the prior; and never estimated by a shard.
func TestJobFindsPriDesPrior(t *testing.T) {
	open := openSmall(t)
	d, err := open(context.Background(), gojev.Options{Debias: debias.PriDe})
	require.NoError(t, err)
	defer d.Close()
	dir := t.TempDir()
	rows := writeRows(t, dir, 12, 3)
	priorFile := filepath.Join(dir, "prior.json")
	var events []batch.PriorEvent
	job := batch.Job{Input: rows, Output: filepath.Join(dir, "out.jsonl"), Decider: d, PriorFile: priorFile, SampleMinRows: 4,
		OnPrior: func(ev batch.PriorEvent) { events = append(events, ev) }}
	_, err = job.Run(context.Background())
	require.NoError(t, err)
	require.Len(t, events, 3)
	assert.Equal(t, []batch.PriorStep{batch.PriorEstimating, batch.PriorEstimated, batch.PriorSaved}, []batch.PriorStep{events[0].Step, events[1].Step, events[2].Step})
	assert.Equal(t, [3]int{4, 12, 12}, [3]int{events[0].SampleRows, events[0].Prompts, events[0].Rows}, "4 rows of 3 options under their 3 shifts")
	saved, err := debias.LoadPrior(priorFile)
	require.NoError(t, err)
	assert.Equal(t, 4, saved.ByOptions[3].SampleRows)
	assert.Equal(t, filepath.Base(testenv.SmallModel(t)), saved.Model.File)
	again, err := batch.ReadPriorFile(priorFile, saved.Model, "direct-options-v1")
	require.NoError(t, err)
	assert.Equal(t, saved, again)
	_, err = batch.ReadPriorFile(priorFile, debias.ModelID{File: "other.gguf", SHA256: "cd"}, "direct-options-v1")
	assert.ErrorIs(t, err, debias.ErrPriorMismatch)
	none, err := batch.ReadPriorFile(filepath.Join(dir, "none.json"), saved.Model, "direct-options-v1")
	assert.NoError(t, err)
	assert.Nil(t, none, "no file yet: estimate one")
	meta, err := batch.ReadRunFile(batch.RunFilePath(job.Output))
	require.NoError(t, err)
	assert.Equal(t, saved.ByOptions, meta.Prior.ByOptions, "the run file records the prior")
	samples := 0
	for _, r := range readRecords(t, job.Output) {
		if r.Debias.PriorSample {
			samples++
		}
	}
	assert.Equal(t, 4, samples)

	events = nil
	only := batch.Job{Input: rows, Decider: d, PriorFile: priorFile, PriorOnly: true, OnPrior: job.OnPrior}
	sum, err := only.Run(context.Background())
	require.NoError(t, err)
	assert.Zero(t, sum.Rows, "decides nothing")
	require.Len(t, events, 1)
	assert.Equal(t, batch.PriorFromFile, events[0].Step)

	// A Decider that has a prior already (SetPrior, here by the runs above) keeps it: nothing
	// is estimated, and the run file records that prior.
	events = nil
	kept := batch.Job{Input: rows, Output: filepath.Join(dir, "kept.jsonl"), Decider: d, OnPrior: job.OnPrior}
	_, err = kept.Run(context.Background())
	require.NoError(t, err)
	assert.Empty(t, events)
	meta, err = batch.ReadRunFile(batch.RunFilePath(kept.Output))
	require.NoError(t, err)
	assert.Equal(t, saved.ByOptions, meta.Prior.ByOptions)

	d.SetPrior(nil)
	shard := batch.Job{Input: rows, Decider: d, Shard: batch.Shard{I: 0, N: 2}, PriorFile: filepath.Join(dir, "none.json")}
	_, err = shard.Run(context.Background())
	var se *batch.SetupError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, "PriorFile", se.Field)
}

// readRecords reads a results file's decisions, in file order.
func readRecords(t *testing.T, path string) []*batch.Record {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	entries, _, err := batch.ReadEntries(f)
	require.NoError(t, err)
	var out []*batch.Record
	for _, e := range entries {
		require.NotNil(t, e.Record, "line %d is a decision", e.N)
		out = append(out, e.Record)
	}
	return out
}

// inputLines returns the input line of each decision in a results file, in file order.
func inputLines(t *testing.T, path string) []int {
	t.Helper()
	var lines []int
	for _, r := range readRecords(t, path) {
		lines = append(lines, r.Line)
	}
	return lines
}

// Under the default bias control (the zero Options) a run estimates PriDe's prior for each
// option count whose sample is at most half its rows, keeps it in the store for later runs,
// and decides the rows of the other counts raw; a later run reads the store and estimates
// nothing; --debias none decides every row raw.
func TestJobDefaultPriorIsStored(t *testing.T) {
	t.Setenv("GOJEV_PRIORS", t.TempDir())
	dir := t.TempDir()
	var b strings.Builder
	for i := 1; i <= 24; i++ {
		b.WriteString(rowLine(fmt.Sprintf("a%d", i), 3) + "\n")
	}
	for i := 1; i <= 5; i++ {
		b.WriteString(rowLine(fmt.Sprintf("b%d", i), 4) + "\n")
	}
	rows := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(rows, []byte(b.String()), 0o644))
	var events []batch.PriorEvent
	run := func(name string, opts gojev.Options) []*batch.Record {
		events = nil
		job := batch.Job{Input: rows, Output: filepath.Join(dir, name), Open: openSmall(t), Options: opts, SampleMinRows: 4,
			OnPrior: func(ev batch.PriorEvent) { events = append(events, ev) }}
		_, err := job.Run(context.Background())
		require.NoError(t, err)
		return readRecords(t, job.Output)
	}
	steps := func() (out []batch.PriorStep) {
		for _, ev := range events {
			out = append(out, ev.Step)
		}
		return out
	}

	recs := run("cold.jsonl", gojev.Options{})
	assert.Equal(t, []batch.PriorStep{batch.PriorEstimating, batch.PriorEstimated, batch.PriorSaved, batch.PriorNone}, steps())
	assert.Equal(t, 4, events[0].SampleRows, "a sample of the 3-option rows only")
	assert.Equal(t, []int{4}, events[3].Raw)
	assert.True(t, events[2].Stored)
	require.NoError(t, events[2].Err)
	kept, err := debias.LoadPrior(events[2].File)
	require.NoError(t, err)
	assert.Equal(t, []int{3}, slices.Sorted(maps.Keys(kept.ByOptions)))
	for _, r := range recs {
		if len(r.Options) == 3 {
			require.NotNil(t, r.Debias, r.ID)
			assert.Equal(t, debias.PriDe, r.Debias.Method)
		} else {
			assert.Nil(t, r.Debias, "no prior for 4 options: raw")
		}
	}
	meta, err := batch.ReadRunFile(batch.RunFilePath(filepath.Join(dir, "cold.jsonl")))
	require.NoError(t, err)
	assert.Equal(t, debias.Method("default"), meta.Debias)

	warm := run("warm.jsonl", gojev.Options{})
	assert.Equal(t, []batch.PriorStep{batch.PriorFromFile, batch.PriorNone}, steps(), "the stored prior: nothing estimated")
	for i, r := range warm {
		if len(r.Options) == 3 && !recs[i].Debias.PriorSample {
			assert.Equal(t, recs[i].Chosen, r.Chosen, r.ID)
			assert.Equal(t, recs[i].Debias.Scores, r.Debias.Scores, r.ID)
		}
	}

	for _, r := range run("raw.jsonl", gojev.Options{Debias: debias.None}) {
		assert.Nil(t, r.Debias, r.ID)
	}
	assert.Empty(t, events)
}

// A run calibrated by a profile compares its rows with the profile's fitting rows: rows whose
// choices are far less sure than the fitting rows' are a shift, in the Summary and the run
// file; rows drawn like them are not.
func TestJobReportsAShift(t *testing.T) {
	dir := t.TempDir()
	rows := writeRows(t, dir, 30, 3)
	open := openSmall(t)
	d, err := open(context.Background(), gojev.Options{Debias: debias.None})
	require.NoError(t, err)
	defer d.Close()
	model, err := gojev.ModelIdentity(testenv.SmallModel(t), "")
	require.NoError(t, err)
	// The fitting rows: this model's own decisions of the same rows (labelled at random).
	var same []calibrate.Sample
	outs, err := d.DecideAll(context.Background(), testenv.Rows(t, rows, 100))
	require.NoError(t, err)
	for i, o := range outs {
		require.NoError(t, o.Err)
		s := calibrate.Sample{Label: i % 3}
		for _, op := range o.Result.Options {
			s.Scores = append(s.Scores, op.Logprob)
		}
		same = append(same, s)
	}
	sure := make([]calibrate.Sample, len(same))
	for i := range sure {
		sure[i] = calibrate.Sample{Scores: []float64{0, -12, -12}, Label: i % 3}
	}
	for _, tc := range []struct {
		name    string
		fit     []calibrate.Sample
		shifted bool
	}{{"same", same, false}, {"sure", sure, true}} {
		prof, err := calibrate.New(model, contract.PromptVersion, map[string][]calibrate.Sample{"raw": tc.fit}, 5)
		require.NoError(t, err)
		job := batch.Job{Input: rows, Output: filepath.Join(dir, tc.name+".jsonl"), Open: open,
			Options: gojev.Options{Debias: debias.None, Calibration: prof}}
		sum, err := job.Run(context.Background())
		require.NoError(t, err)
		require.NotNil(t, sum.Shift, tc.name)
		assert.Equal(t, tc.shifted, sum.Shift.Shifted, "%s: %+v", tc.name, sum.Shift)
		assert.Equal(t, 30, sum.Served.Rows)
		meta, err := batch.ReadRunFile(batch.RunFilePath(job.Output))
		require.NoError(t, err)
		require.NotNil(t, meta.Shift)
		assert.Equal(t, tc.shifted, meta.Shift.Shifted)
		if tc.shifted {
			assert.Contains(t, meta.Shift.Why, "mean probability of the choice")
		}
	}
}
