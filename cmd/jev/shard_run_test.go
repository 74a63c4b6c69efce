package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/testenv"
)

// decisionFields reads a results file as one map a line, without the fields a sharded run may
// change: timing (ms, stats) and the backend note.
func decisionFields(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "%s line %d", path, i+1)
		for _, k := range []string{"ms", "stats", "backend"} {
			delete(m, k)
		}
		recs = append(recs, m)
	}
	return recs
}

// jevCmd returns the command `bin args...` with extra environment variables.
func jevCmd(bin string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

// Four shards of one input run as separate processes at once; one is killed mid-way
// (SIGKILL), merge then refuses, the shard is retried with --resume, and the merged file
// equals a single-process run on every decision field. Shard 3 takes its index from a Slurm
// array task's environment, the retry from a Kubernetes Indexed Job's.
func TestShardedRunMatchesTheSingleRun(t *testing.T) {
	bin := buildJev(t)
	lines := interruptRows(120)
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	noScheduler := []string{"SLURM_ARRAY_TASK_ID" + "=", "JOB_COMPLETION_INDEX" + "=", "JEV_SHARD_COUNT" + "="}

	single := filepath.Join(dir, "single.jsonl")
	// --debias none: the shards and the single run decide alike by construction here (under
	// the default, a single run that estimates PriDe's prior decides its sample rows by their
	// permutations, and shards never estimate: docs/clusters.md).
	cmd, singleErr := jevCmd(bin, noScheduler, append(append([]string{"decide"}, modelArgs(t)...), "--debias", "none", "-i", in, "-o", single)...)
	require.NoError(t, cmd.Run(), singleErr.String())

	parts := filepath.Join(dir, "out", "part-{shard}.jsonl")
	shardArgs := func(spec string) []string {
		// --window 2: a shard writes its rows two at a time, not all 30 in one burst, so the kill
		// lands mid-way (the window never changes a result).
		return append(append([]string{"decide"}, modelArgs(t)...), "--debias", "none", "-t", "1", "--window", "2", "-i", in, "-o", parts, "--shard", spec)
	}
	var cmds [4]*exec.Cmd
	var errs [4]*bytes.Buffer
	for i := range 4 {
		env, spec := noScheduler, fmt.Sprintf("%d/4", i)
		if i == 3 {
			env = append(env, "SLURM_ARRAY_TASK_ID"+"=10", "SLURM_ARRAY_TASK_MIN"+"=7", "SLURM_ARRAY_TASK_MAX"+"=10", "SLURM_ARRAY_TASK_COUNT"+"=4")
			spec = "auto"
		}
		cmds[i], errs[i] = jevCmd(bin, env, shardArgs(spec)...)
		require.NoError(t, cmds[i].Start())
	}
	exited := make(chan struct{})
	var killedErr error
	var wg sync.WaitGroup
	wg.Go(func() { killedErr = cmds[2].Wait(); close(exited) })
	part2 := filepath.Join(dir, "out", "part-2.jsonl")
	waitForLines(t, part2, 5, exited)
	require.NoError(t, cmds[2].Process.Signal(syscall.SIGKILL))
	wg.Wait()
	require.Error(t, killedErr)
	for _, i := range []int{0, 1, 3} {
		require.NoError(t, cmds[i].Wait(), "shard %d: %s", i, errs[i])
		assert.Contains(t, errs[i].String(), fmt.Sprintf("shard %d/4: rows 30,", i))
	}
	data, err := os.ReadFile(part2)
	require.NoError(t, err)
	kept := len(wholeRecords(t, data))
	require.Less(t, kept, 30, "shard 2 was killed before its end")

	merged := filepath.Join(dir, "merged.jsonl")
	glob := filepath.Join(dir, "out", "part-*.jsonl")
	code, _, mergeErr := jev(t, "", "merge", "-i", in, "-o", merged, glob)
	assert.Equal(t, 1, code, "the killed shard's rows are missing")
	assert.Contains(t, mergeErr, fmt.Sprintf("%d missing row", 30-kept))
	assert.NoFileExists(t, merged)

	retry, retryErr := jevCmd(bin, append(noScheduler, "JOB_COMPLETION_INDEX"+"=2", "JEV_SHARD_COUNT"+"=4"), append(shardArgs("auto"), "--resume")...)
	require.NoError(t, retry.Run(), retryErr.String())
	assert.Contains(t, retryErr.String(), fmt.Sprintf("%d records kept", kept))
	assert.Contains(t, retryErr.String(), fmt.Sprintf("shard 2/4: rows %d, decided", 30-kept))

	code, _, mergeErr = jev(t, "", "merge", "-i", in, "-o", merged, glob)
	require.Equal(t, 0, code, mergeErr)
	assert.Contains(t, mergeErr, "120 records from 4 parts, every input line once")
	want := decisionFields(t, single)
	got := decisionFields(t, merged)
	require.Len(t, got, len(lines))
	for i := range want {
		require.Equal(t, want[i], got[i], "line %d: the merged record equals the single run's", i+1)
	}
	// merge prints the single run's summary (the counts, accuracy and letters; not the rate).
	assert.Equal(t, summaryHead(t, singleErr.String()), summaryHead(t, mergeErr))
	code, stdout, repErr := jev(t, "", "report", merged)
	require.Equal(t, 0, code, repErr)
	assert.Contains(t, stdout, "merged")
}

// summaryHead returns the summary line of a jev decide or merge stderr up to its rate
// ("rows 120, decided 96, errors 24, accuracy ...").
func summaryHead(t *testing.T, stderr string) string {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(line, "rows ") {
			i := strings.Index(line, " decisions/s")
			require.Positive(t, i, line)
			return line[:strings.LastIndex(line[:i], ", ")]
		}
	}
	t.Fatalf("no summary in %q", stderr)
	return ""
}

// --resume refuses to append to a file that another model or other bias control wrote.
func TestResumeRefusesAnotherRunsFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(row("a", 2)+"\n"+row("b", 3)+"\n"), 0o644))
	out := filepath.Join(dir, "out.jsonl")
	args := append(append([]string{"decide"}, modelArgs(t)...), "-i", in, "-o", out)
	code, _, stderr := jev(t, "", args...)
	require.Equal(t, 0, code, stderr)
	data, err := os.ReadFile(out)
	require.NoError(t, err)
	first := strings.SplitAfter(string(data), "\n")[0]
	require.NoError(t, os.WriteFile(out, []byte(first), 0o644)) // as if killed after one row

	code, _, stderr = jev(t, "", append(args, "--resume", "--permute", "cyclic")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "this run has different bias control (--debias, --permute) than the run that wrote it")
	assert.NotContains(t, stderr, "records kept", "refused before saying it resumes")

	meta, ok := loadRunMeta(out + ".run.json")
	require.True(t, ok)
	meta.Model.SHA256 = strings.Repeat("0", 64)
	require.NoError(t, meta.Save(out+".run.json"))
	code, _, stderr = jev(t, "", append(args, "--resume")...)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "this run has different models than the run that wrote it")
	after, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, first, string(after), "a refused resume appends nothing")
}

// A sharded PriDe run: the prior is estimated once (--prior-only) and every shard reads it;
// the merged file equals a single run with the same --prior, debiased fields included.
func TestShardedPriDeSharesOnePrior(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(interruptRows(30), "\n")+"\n"), 0o644))
	prior := filepath.Join(dir, "prior.json")
	pride := []string{"--debias", "pride", "--prior", prior}
	args := func(extra ...string) []string {
		return append(append(append([]string{"decide"}, modelArgs(t)...), "-i", in), append(pride, extra...)...)
	}
	code, stdout, stderr := jev(t, "", args("--prior-only")...)
	require.Equal(t, 0, code, stderr)
	assert.Empty(t, stdout, "--prior-only decides nothing")
	assert.Contains(t, stderr, "prior saved to "+prior)
	saved, err := os.ReadFile(prior)
	require.NoError(t, err)
	code, _, stderr = jev(t, "", args("--prior-only")...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stderr, "prior read from "+prior, "a second --prior-only (a retried step) reads the prior it saved")
	again, err := os.ReadFile(prior)
	require.NoError(t, err)
	assert.Equal(t, saved, again)

	for i := range 2 {
		code, _, stderr = jev(t, "", args("--shard", fmt.Sprintf("%d/2", i), "-o", filepath.Join(dir, "part-{shard}.jsonl"))...)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "prior read from")
		assert.NotContains(t, stderr, "estimating")
	}
	merged := filepath.Join(dir, "merged.jsonl")
	code, _, stderr = jev(t, "", "merge", "-i", in, "-o", merged, filepath.Join(dir, "part-*.jsonl"))
	require.Equal(t, 0, code, stderr)
	single := filepath.Join(dir, "single.jsonl")
	code, _, stderr = jev(t, "", args("-o", single)...)
	require.Equal(t, 0, code, stderr)
	want, got := decisionFields(t, single), decisionFields(t, merged)
	require.Len(t, got, 30)
	debiased := 0
	for i := range want {
		if got[i]["error"] == nil {
			require.NotNil(t, got[i]["debias"], "line %d is debiased", i+1)
			debiased++
		}
		require.Equal(t, want[i], got[i], "line %d", i+1)
	}
	assert.Greater(t, debiased, 20)
	meta, ok := loadRunMeta(merged + ".run.json")
	require.True(t, ok)
	require.NotNil(t, meta.Prior, "the merged run file keeps the prior, for jev report")
}

// The example manifests do what they say when their commands run as the scheduler would run
// them: the sbatch script submitting itself and its merge (to a stand-in sbatch), then as 4
// array tasks and the merge job; the Kubernetes Jobs' containers as 4 completion indexes and
// the merge.
func TestExampleManifestsRun(t *testing.T) {
	bin := buildJev(t)
	root := testenv.RepoRoot(t)
	tickets, err := os.ReadFile(filepath.Join(root, "examples", "tickets.jsonl"))
	require.NoError(t, err)
	const nRows = 6 // the first 6 tickets: shards of 2, 2, 1 and 1 rows
	rows := []byte(strings.Join(strings.SplitAfter(string(tickets), "\n")[:nRows], ""))
	model := testenv.SmallModel(t)

	t.Run("slurm", func(t *testing.T) {
		dir := t.TempDir()
		script := filepath.Join(root, "examples", "slurm", "decide.sbatch")
		require.NoError(t, os.WriteFile(filepath.Join(dir, "rows.jsonl"), rows, 0o644))
		fake := filepath.Join(dir, "fakebin")
		require.NoError(t, os.MkdirAll(fake, 0o755))
		submitted := filepath.Join(dir, "submitted")
		// The stand-in sbatch records its arguments, one a line, and a blank line after them,
		// and answers --parsable with job ids 4242, 4243, ...
		require.NoError(t, os.WriteFile(filepath.Join(fake, "sbatch"), []byte(`#!/usr/bin/env bash
for a in "$@"; do printf '%s\n' "$a"; done >> `+submitted+`
echo >> `+submitted+`
echo $((4242 + $(grep -c '^$' `+submitted+`) - 1))
`), 0o755))
		base := append(os.Environ(), "PATH="+fake+":"+os.Getenv("PATH"), "JEV="+bin, "MODEL="+model, "ROWS=rows.jsonl", "OUT=out",
			"SLURM_ARRAY_TASK_ID"+"=", "JOB_COMPLETION_INDEX"+"=", "JEV_SHARD_COUNT"+"=")
		// Submit mode, on the login node: the array, then the merge depending on it.
		cmd := exec.Command("bash", script, "--array=0-3")
		cmd.Dir, cmd.Env = dir, base
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "submitting: %s", out)
		assert.Contains(t, string(out), "submitted the array job 4242 (one task a shard) and the merge job 4243")
		data, err := os.ReadFile(submitted)
		require.NoError(t, err)
		jobs := strings.Split(strings.TrimSuffix(string(data), "\n\n"), "\n\n")
		require.Len(t, jobs, 2, "the array job and the merge job")
		array, merge := strings.Split(jobs[0], "\n"), strings.Split(jobs[1], "\n")
		assert.Equal(t, script, array[len(array)-1], "the array job is the script itself")
		assert.Contains(t, array, "--array=0-3")
		assert.Contains(t, merge, "--dependency=afterok:4242")
		// The array tasks, as Slurm runs them (with the environment it sets).
		for i := range 4 {
			cmd := exec.Command("bash", script)
			cmd.Dir = dir
			cmd.Env = append(base, "SLURM_ARRAY_JOB_ID=4242", "SLURM_CPUS_PER_TASK=1",
				"SLURM_ARRAY_TASK_ID"+"="+fmt.Sprint(i), "SLURM_ARRAY_TASK_MIN"+"=0", "SLURM_ARRAY_TASK_MAX"+"=3", "SLURM_ARRAY_TASK_COUNT"+"=4")
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "array task %d: %s", i, out)
			assert.Contains(t, string(out), fmt.Sprintf("shard %d/4: rows %d,", i, batch.Shard{I: i, N: 4}.Size(nRows)))
		}
		// The merge job: sbatch --wrap runs its command with sh.
		wrap := argAfter(merge, "--wrap")
		require.NotEmpty(t, wrap)
		cmd = exec.Command("sh", "-c", wrap)
		cmd.Dir = dir
		out, err = cmd.CombinedOutput()
		require.NoError(t, err, "the merge job: %s", out)
		assert.Contains(t, string(out), fmt.Sprintf("%d records from 4 parts, every input line once", nRows))
		assert.Len(t, decisionFields(t, filepath.Join(dir, "out", "merged.jsonl")), nRows)
	})

	t.Run("kubernetes", func(t *testing.T) {
		jobs := readK8sJobs(t)
		dir := t.TempDir()
		// The volume mounted at /data: the rows and the model under the manifest's names.
		local := func(args []string) []string {
			out := make([]string, len(args))
			for i, a := range args {
				out[i] = strings.Replace(a, "/data/", dir+"/", 1)
			}
			return out
		}
		decide := jobs["decide"].Spec.Template.Spec.Containers[0]
		dargs := local(decide.Args)
		require.NoError(t, os.WriteFile(argAfter(dargs, "-i"), rows, 0o644))
		require.NoError(t, os.MkdirAll(filepath.Dir(argAfter(dargs, "-m")), 0o755))
		require.NoError(t, os.Symlink(model, argAfter(dargs, "-m")))
		env := []string{"SLURM_ARRAY_TASK_ID" + "="}
		for _, e := range decide.Env {
			env = append(env, e.Name+"="+e.Value)
		}
		n := jobs["decide"].Spec.Completions
		for i := range n {
			cmd, stderr := jevCmd(bin, append(env, fmt.Sprintf("%s=%d", "JOB_COMPLETION_INDEX", i)), dargs...)
			require.NoError(t, cmd.Run(), "completion index %d: %s", i, stderr)
			assert.Contains(t, stderr.String(), fmt.Sprintf("shard %d/%d: rows %d,", i, n, batch.Shard{I: i, N: n}.Size(nRows)))
		}
		margs := local(jobs["merge"].Spec.Template.Spec.Containers[0].Args)
		cmd, stderr := jevCmd(bin, nil, margs...)
		require.NoError(t, cmd.Run(), "the merge Job: %s", stderr)
		assert.Contains(t, stderr.String(), fmt.Sprintf("%d records from %d parts, every input line once", nRows, n))
		assert.Len(t, decisionFields(t, argAfter(margs, "-o")), nRows)
	})
}
