package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/testenv"
)

// Mistakes a sharded run refuses before it loads a model (exit code 2, saying the fix).
func TestDecideRefusesShardMistakes(t *testing.T) {
	for _, k := range []string{"SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX", "JEV_SHARD_COUNT"} {
		t.Setenv(k, "")
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(row("a", 2)+"\n"+row("b", 2)+"\n"), 0o644))
	other := filepath.Join(dir, "part-0.jsonl")
	require.NoError(t, os.WriteFile(other, []byte(`{"id":"a","line":1,"chosen":"o0"}`+"\n"), 0o644))
	missing := filepath.Join(dir, "no-such-model.gguf")
	// A part that a run of the whole input (shard 0/1, say by `sbatch --array=2`) wrote.
	rerun := filepath.Join(dir, "part-2.jsonl")
	require.NoError(t, os.WriteFile(rerun, nil, 0o644))
	require.NoError(t, os.WriteFile(rerun+".run.json", []byte(`{"shard":"0/1"}`), 0o644))
	// A results file another process is writing.
	busy := filepath.Join(dir, "busy.jsonl")
	held, err := batch.OpenResume(busy) // locked, as a run writing it holds it
	require.NoError(t, err)
	defer held.Close()
	_, err = held.Write([]byte("{\"id\":\"a\",\"line\":1}\n"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"auto outside a scheduler", []string{"--shard", "auto"}, "no Slurm array task (SLURM_ARRAY_TASK_ID) and no Kubernetes Indexed Job (JOB_COMPLETION_INDEX)"},
		{"{shard} without --shard", []string{"-o", filepath.Join(dir, "part-{shard}.jsonl")}, "{shard} in a file name needs --shard"},
		{"PriDe without a prior", []string{"--shard", "0/2", "--debias", "pride"}, "needs the prior every shard shares, in --prior FILE"},
		{"PriDe with a missing prior", []string{"--shard", "0/2", "--debias", "pride", "--prior", filepath.Join(dir, "prior.json")}, "which is missing"},
		{"--prior-only without a file", []string{"--debias", "pride", "--prior-only"}, "give --debias pride --prior FILE"},
		{"--prior-only per shard", []string{"--shard", "0/2", "--debias", "pride", "--prior", "p.json", "--prior-only"}, "from the whole input: drop --shard"},
		{"resuming another shard's file", []string{"--shard", "1/2", "-o", other, "--resume"}, "it holds a record of input line 1, which is shard 0/2's, not this shard's (1/2)"},
		{"resuming a file another shard count wrote", []string{"--shard", "2/4", "-o", rerun, "--resume"}, "its run file says it holds shard 0/1, and this run is shard 2/4"},
		{"a file another run is writing", []string{"--shard", "1/2", "-o", busy}, "another process is writing this file"},
		{"resuming a file another run is writing", []string{"-o", busy, "--resume"}, "another process is writing this file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := jev(t, "", append([]string{"decide", "-m", missing, "-i", in}, tc.args...)...)
			assert.Equal(t, 2, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.NotContains(t, stderr, "no-such-model", "refused before loading the model")
		})
	}
	data, err := os.ReadFile(busy)
	require.NoError(t, err)
	assert.Equal(t, "{\"id\":\"a\",\"line\":1}\n", string(data), "a refused run leaves the other run's file as it was")
}

// mergeFixture writes an input of n rows and the 4 shards' parts a run of it would leave:
// records naming their line and id, and run files naming their shard.
func mergeFixture(t *testing.T, n int) (dir, in string, parts []string) {
	t.Helper()
	dir = t.TempDir()
	var lines []string
	for i := 1; i <= n; i++ {
		if i == 6 {
			lines = append(lines, `{"id": "broken", `) // no readable id: null
			continue
		}
		lines = append(lines, row(fmt.Sprintf("r%d", i), 2))
	}
	in = filepath.Join(dir, "rows.jsonl")
	require.NoError(t, os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	for i := range 4 {
		var recs []string
		for l := i + 1; l <= n; l += 4 {
			recs = append(recs, fixtureRecord(l))
		}
		p := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", i))
		require.NoError(t, os.WriteFile(p, []byte(strings.Join(recs, "")), 0o644))
		meta := fmt.Sprintf(`{"prompt_version":"direct-options-v1","shard":"%d/4","model":{"file":"m.gguf","sha256":"abc"},"started":"2026-12-01T10:00:0%dZ","elapsed_s":10,"finished":true}`, i, i)
		require.NoError(t, os.WriteFile(p+".run.json", []byte(meta), 0o644))
		parts = append(parts, p)
	}
	return dir, in, parts
}

// fixtureRecord is the record jev decide writes for line l of mergeFixture's input.
func fixtureRecord(l int) string {
	if l == 6 {
		return `{"id":null,"line":6,"error":"bad row: invalid JSON"}` + "\n"
	}
	chosen := "o0"
	if l%3 == 0 {
		chosen = "o1"
	}
	return fmt.Sprintf(`{"id":"r%d","prompt_version":"direct-options-v1","prompt_sha256":"h%d","n_prompt_tokens":10,"chosen":%q,"chosen_letter":"%c","probability":0.75,"options":[{"id":"o0","letter":"A","logprob":-0.3,"probability":0.75},{"id":"o1","letter":"B","logprob":-1.4,"probability":0.25}],"label":"o0","correct":%v,"backend":"in-process","renderer":"go","template_date":"2026-12-01","ms":5,"stats":{},"line":%d}`,
		l, l, chosen, 'A'+rune(chosen[1]-'0'), chosen == "o0", l) + "\n"
}

func TestMergeJoinsThePartsInInputOrder(t *testing.T) {
	dir, in, parts := mergeFixture(t, 13)
	out := filepath.Join(dir, "merged.jsonl")
	// Parts in any order; a glob is expanded by merge itself.
	code, _, stderr := jev(t, "", "merge", "-i", in, parts[3], filepath.Join(dir, "part-[0-2].jsonl"), "-o", out)
	require.Equal(t, 0, code, stderr)
	var want strings.Builder
	for l := 1; l <= 13; l++ {
		want.WriteString(fixtureRecord(l))
	}
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, want.String(), string(got))
	// The summary a single run prints: 13 rows, one error, 12 labelled decisions of which the
	// 4 at lines 3, 9, 12 (and not 6, the error) chose o1.
	assert.Contains(t, stderr, "jev merge: 13 records from 4 parts, every input line once")
	assert.Contains(t, stderr, "rows 13, decided 12, errors 1, accuracy 75.0% (9/12 labelled), most chosen letter A 75%")
	meta, ok := loadRunMeta(out + ".run.json")
	require.True(t, ok)
	assert.Equal(t, 13, meta.Rows)
	assert.Equal(t, 12, meta.Decided)
	assert.Equal(t, "abc", meta.Model.SHA256)
	assert.Empty(t, meta.Shard)
	assert.Len(t, meta.Parts, 4)
	assert.InDelta(t, 13.0, meta.ElapsedS, 1e-9, "wall time: from the first part's start (10:00:00) to the last one's end (10:00:03 + 10 s)")
	assert.True(t, meta.Finished)
	// The merged file feeds jev report.
	code, stdout, stderr := jev(t, "", "report", out)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "75.0")
}

func TestMergeReportsWhatDoesNotAddUp(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts func(t *testing.T, dir string, parts []string) []string
		want  []string
	}{
		{"a missing shard", func(t *testing.T, dir string, parts []string) []string {
			return []string{parts[0], parts[1], parts[3]}
		}, []string{"1 shard incomplete:", "shard 2/4: none of its 3 rows is in the parts", "run jev decide --shard 2/4"}},
		{"missing rows of a killed shard", func(t *testing.T, dir string, parts []string) []string {
			// Shard 1 was killed after its first record, mid-way through the second.
			rec := fixtureRecord(2) + fixtureRecord(6)[:20]
			require.NoError(t, os.WriteFile(parts[1], []byte(rec), 0o644))
			require.NoError(t, os.WriteFile(parts[1]+".run.json", []byte(`{"prompt_version":"direct-options-v1","shard":"1/4","model":{"file":"m.gguf","sha256":"abc"},"finished":false}`), 0o644))
			return parts
		}, []string{"2 missing rows:", "input line 6 (id null)", "input line 10 (id \"r10\")", "1 cut part:", "part-1.jsonl ends with a cut line 2", "--resume",
			"shard 1/4: 2 of its 3 rows are missing, and the run file of", "says its run did not finish (killed?): rerun it with jev decide --shard 1/4 --resume"}},
		{"a part still being written", func(t *testing.T, dir string, parts []string) []string {
			f, err := batch.OpenResume(parts[3]) // locked, as a run writing it holds it
			require.NoError(t, err)
			t.Cleanup(func() { _ = f.Close() })
			return parts
		}, []string{"1 part still being written:", "part-3.jsonl is still being written (a jev decide holds it)"}},
		{"a part without its run file", func(t *testing.T, dir string, parts []string) []string {
			require.NoError(t, os.Remove(parts[2]+".run.json"))
			return parts
		}, []string{"1 part without a run file:", "part-2.jsonl has no run file (", "unlike the other parts"}},
		{"a duplicated row", func(t *testing.T, dir string, parts []string) []string {
			f, err := os.OpenFile(parts[2], os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(fixtureRecord(7))
			require.NoError(t, err)
			require.NoError(t, f.Close())
			return parts
		}, []string{"1 duplicate row:", "input line 7 (id \"r7\"):", "part-2.jsonl line 2 and", "part-2.jsonl line 4"}},
		{"a part given twice", func(t *testing.T, dir string, parts []string) []string {
			return append(parts, parts[0])
		}, []string{"4 duplicate rows:", "input line 1 (id \"r1\")"}},
		{"a row of another input", func(t *testing.T, dir string, parts []string) []string {
			foreign := filepath.Join(dir, "other.jsonl")
			rec := strings.Replace(fixtureRecord(5), `"id":"r5"`, `"id":"x5"`, 1) + strings.Replace(fixtureRecord(9), `"line":9`, `"line":99`, 1)
			require.NoError(t, os.WriteFile(foreign, []byte(rec), 0o644))
			return append(parts, foreign)
		}, []string{"2 foreign rows:", `other.jsonl line 1: a record of id "x5" for input line 5, which has id "r5"`, "other.jsonl line 2: a record of input line 99, but the input has 13 lines"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, in, parts := mergeFixture(t, 13)
			out := filepath.Join(dir, "merged.jsonl")
			args := append([]string{"merge", "-i", in, "-o", out}, tc.parts(t, dir, parts)...)
			code, stdout, stderr := jev(t, "", args...)
			assert.Equal(t, 1, code, stderr)
			for _, w := range tc.want {
				assert.Contains(t, stderr, w)
			}
			assert.Contains(t, stderr, "do not add up")
			assert.Empty(t, stdout)
			assert.NoFileExists(t, out, "nothing is written when the parts do not add up")
		})
	}
	t.Run("no part has a run file", func(t *testing.T) {
		dir, in, parts := mergeFixture(t, 13)
		for _, p := range parts {
			require.NoError(t, os.Remove(p+".run.json"))
		}
		out := filepath.Join(dir, "m.jsonl")
		code, _, stderr := jev(t, "", "merge", "-i", in, "-o", out, parts[0], parts[1], parts[2], parts[3])
		assert.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, "no part has a run file (<part>.run.json): the parts' models and flags cannot be checked")
		assert.FileExists(t, out)
		assert.NoFileExists(t, out+".run.json")
	})
	t.Run("parts of different runs", func(t *testing.T) {
		dir, in, parts := mergeFixture(t, 13)
		meta := `{"prompt_version":"direct-options-v1","shard":"2/4","model":{"file":"m.gguf","sha256":"def"}}`
		require.NoError(t, os.WriteFile(parts[2]+".run.json", []byte(meta), 0o644))
		code, _, stderr := jev(t, "", "merge", "-i", in, "-o", filepath.Join(dir, "m.jsonl"), parts[0], parts[1], parts[2], parts[3])
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "part-2.jsonl were decided with different models")
	})
	t.Run("a results file without line numbers", func(t *testing.T) {
		dir, in, parts := mergeFixture(t, 5)
		old := filepath.Join(dir, "old.jsonl")
		require.NoError(t, os.WriteFile(old, []byte(`{"id":"r1","chosen":"o0"}`+"\n"), 0o644))
		code, _, stderr := jev(t, "", "merge", "-i", in, old, parts[1])
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "old.jsonl line 1 is not a jev decide record with a line number")
	})
	t.Run("the output is one of the parts", func(t *testing.T) {
		_, in, parts := mergeFixture(t, 5)
		before, err := os.ReadFile(parts[1])
		require.NoError(t, err)
		code, _, stderr := jev(t, "", "merge", "-i", in, "-o", parts[1], parts[0], parts[1], parts[2], parts[3])
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "is also an input of the merge")
		after, err := os.ReadFile(parts[1])
		require.NoError(t, err)
		assert.Equal(t, before, after)
	})
	t.Run("a glob that matches nothing", func(t *testing.T) {
		_, in, _ := mergeFixture(t, 5)
		code, _, stderr := jev(t, "", "merge", "-i", in, "/nonexistent/part-*.jsonl")
		assert.Equal(t, 2, code)
		assert.Contains(t, stderr, "matches no file")
	})
}

// k8sJob is what the test reads of a Job manifest.
type k8sJob struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		CompletionMode       string `yaml:"completionMode"`
		Completions          int    `yaml:"completions"`
		Parallelism          int    `yaml:"parallelism"`
		BackoffLimitPerIndex *int   `yaml:"backoffLimitPerIndex"`
		Template             struct {
			Spec struct {
				RestartPolicy string `yaml:"restartPolicy"`
				Containers    []struct {
					Image   string   `yaml:"image"`
					Command []string `yaml:"command"`
					Args    []string `yaml:"args"`
					Env     []struct {
						Name  string `yaml:"name"`
						Value string `yaml:"value"`
					} `yaml:"env"`
					VolumeMounts []struct {
						Name      string `yaml:"name"`
						MountPath string `yaml:"mountPath"`
					} `yaml:"volumeMounts"`
				} `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

// readK8sJobs parses the Kubernetes example: its Jobs by their step label.
func readK8sJobs(t *testing.T) map[string]k8sJob {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.RepoRoot(t), "examples/k8s/decide-indexed-job.yaml"))
	require.NoError(t, err)
	defer f.Close()
	jobs := map[string]k8sJob{}
	dec := yaml.NewDecoder(f)
	for {
		var j k8sJob
		if err := dec.Decode(&j); err != nil {
			require.ErrorContains(t, err, "EOF")
			break
		}
		require.Equal(t, "Job", j.Kind)
		jobs[j.Metadata.Labels["step"]] = j
	}
	return jobs
}

// argAfter returns the value after flag in args ("" when absent).
func argAfter(args []string, flag string) string {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// The example manifests parse, and say what a sharded run needs: N completions and
// JEV_SHARD_COUNT = N, --shard auto, --resume, one part file per shard, a merge of those parts.
func TestExampleManifestsParse(t *testing.T) {
	jobs := readK8sJobs(t)
	require.Len(t, jobs, 2, "a decide Job and a merge Job, by their step label")
	decide, merge := jobs["decide"], jobs["merge"]
	assert.Equal(t, "Indexed", decide.Spec.CompletionMode)
	assert.Positive(t, decide.Spec.Completions)
	require.NotNil(t, decide.Spec.BackoffLimitPerIndex, "a failed shard is retried")
	assert.Equal(t, "Never", decide.Spec.Template.Spec.RestartPolicy, "backoffLimitPerIndex needs restartPolicy Never")
	c := decide.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"jev"}, c.Command)
	assert.Equal(t, "decide", c.Args[0])
	assert.Equal(t, "auto", argAfter(c.Args, "--shard"))
	assert.Contains(t, c.Args, "--resume")
	assert.Contains(t, argAfter(c.Args, "-o"), "{shard}")
	assert.NotEmpty(t, argAfter(c.Args, "-m"), "one model")
	count := ""
	for _, e := range c.Env {
		if e.Name == "JEV_SHARD_COUNT" {
			count = e.Value
		}
	}
	assert.Equal(t, fmt.Sprint(decide.Spec.Completions), count, "JEV_SHARD_COUNT is the completion count")
	mc := merge.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "merge", mc.Args[0])
	assert.Equal(t, argAfter(c.Args, "-i"), argAfter(mc.Args, "-i"), "merge checks against the rows the shards decided")
	assert.Contains(t, mc.Args, strings.ReplaceAll(argAfter(c.Args, "-o"), "{shard}", "*"), "merge reads every part")
	assert.Equal(t, c.Image, mc.Image)

	sbatch := filepath.Join(testenv.RepoRoot(t), "examples/slurm/decide.sbatch")
	out, err := exec.Command("bash", "-n", sbatch).CombinedOutput()
	require.NoError(t, err, "bash -n: %s", out)
	src, err := os.ReadFile(sbatch)
	require.NoError(t, err)
	for _, want := range []string{"#SBATCH --array=0-", "#SBATCH --requeue", "--shard auto --resume", "part-{shard}.jsonl", `--dependency="afterok:$jid"`, "merge -i"} {
		assert.Contains(t, string(src), want)
	}
}
