package batch

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Shards: one part of a rows file per process, so that a scheduler's array tasks (Slurm
// array jobs, Kubernetes Indexed Jobs) split a large file among processes; Merge puts the
// parts back together (jev decide --shard, jev merge).
//
// Membership is by input line, round robin: line L (counting from 1) belongs to shard
// (L-1) mod N. It depends on nothing but the line's position, so the N shards partition the
// file exactly, whatever the rows hold (a line that is not a row, or has no readable id, is
// some shard's, and gets its error record there), and every shard gets the same mix of the
// file's beginning and end.

// Shard is shard I of N, I counting from 0; the zero Shard (N == 0) is the whole input.
type Shard struct{ I, N int }

// String is "I/N".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.I, s.N) }

// All reports whether s is the whole input (no shard).
func (s Shard) All() bool { return s.N == 0 }

// Has reports whether input line lineNo (from 1) belongs to s.
func (s Shard) Has(lineNo int) bool { return s.N == 0 || (lineNo-1)%s.N == s.I }

// shardOf returns the shard of N that line lineNo belongs to.
func shardOf(lineNo, n int) int { return (lineNo - 1) % n }

// Size returns how many of lines input lines belong to s.
func (s Shard) Size(lines int) int {
	if s.N == 0 {
		return lines
	}
	if lines <= s.I {
		return 0
	}
	return (lines-s.I-1)/s.N + 1
}

// Spec is the shard as a run file records it (RunFile.Shard): "I/N", or "" for the whole
// input.
func (s Shard) Spec() string {
	if s.All() {
		return ""
	}
	return s.String()
}

// shardWords names a run file's shard (a Spec) for a message.
func shardWords(s string) string {
	if s == "" {
		return "the whole input (no --shard)"
	}
	return "shard " + s
}

// The environment variables ParseShard("auto") reads.
const (
	envSlurmID    = "SLURM_ARRAY_TASK_ID"
	envSlurmCount = "SLURM_ARRAY_TASK_COUNT"
	envSlurmMin   = "SLURM_ARRAY_TASK_MIN"
	envSlurmMax   = "SLURM_ARRAY_TASK_MAX"
	envK8sIndex   = "JOB_COMPLETION_INDEX"
	// envShardCount carries a Kubernetes Indexed Job's completion count, which Kubernetes does
	// not put in the pod's environment: the manifest sets it to spec.completions.
	envShardCount = "JEV_SHARD_COUNT"
)

// ErrNoShardEnv: ParseShard("auto") found neither a Slurm array task nor a Kubernetes Indexed Job.
var ErrNoShardEnv = errors.New("--shard auto: no Slurm array task (" + envSlurmID + ") and no Kubernetes Indexed Job (" + envK8sIndex + ") in the environment")

// ParseShard reads a shard spec (jev decide --shard): "I/N" (0 ≤ I < N), "" for the whole
// input, or "auto", which takes I and N from the scheduler's environment (getenv, os.Getenv in a program; ErrNoShardEnv outside both):
//   - a Slurm array job: I = SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN,
//     N = SLURM_ARRAY_TASK_COUNT; the array must be a contiguous range (--array=0-15, or
//     1-16), since a step or a list leaves some shard without a task;
//   - a Kubernetes Indexed Job: I = JOB_COMPLETION_INDEX, N = JEV_SHARD_COUNT (set it to
//     the Job's spec.completions).
//
// With no such environment, or both, it fails: a run never silently decides everything.
func ParseShard(spec string, getenv func(string) string) (Shard, error) {
	if spec == "" {
		return Shard{}, nil
	}
	if spec == "auto" {
		return shardFromEnv(getenv)
	}
	is, ns, ok := strings.Cut(spec, "/")
	i, ierr := strconv.Atoi(is)
	n, nerr := strconv.Atoi(ns)
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("--shard %q: want I/N (shard I of N, I from 0, e.g. 0/4) or auto", spec)
	}
	return checkShard(i, n, "--shard "+spec)
}

func checkShard(i, n int, what string) (Shard, error) {
	if n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%s: want 0 ≤ I < N, got shard %d of %d", what, i, n)
	}
	return Shard{I: i, N: n}, nil
}

// shardFromEnv is ParseShard("auto"): the shard of a Slurm array task or a Kubernetes Indexed
// Job from its environment (getenv, os.Getenv in a program); ErrNoShardEnv outside both.
func shardFromEnv(getenv func(string) string) (Shard, error) {
	slurm, k8s := getenv(envSlurmID) != "", getenv(envK8sIndex) != ""
	switch {
	case slurm && k8s:
		return Shard{}, fmt.Errorf("--shard auto: both %s and %s are set; pass --shard I/N", envSlurmID, envK8sIndex)
	case slurm:
		v, err := envInts(getenv, envSlurmID, envSlurmMin, envSlurmMax, envSlurmCount)
		if err != nil {
			return Shard{}, fmt.Errorf("--shard auto (Slurm array task): %w", err)
		}
		id, lo, hi, count := v[0], v[1], v[2], v[3]
		if hi-lo+1 != count {
			return Shard{}, fmt.Errorf("--shard auto: the Slurm array %d-%d has %d tasks, not one per index: submit a contiguous range (--array=0-%d) or pass --shard I/N", lo, hi, count, count-1)
		}
		return checkShard(id-lo, count, fmt.Sprintf("--shard auto (%s=%d, %s=%d, %s=%d)", envSlurmID, id, envSlurmMin, lo, envSlurmCount, count))
	case k8s:
		if getenv(envShardCount) == "" {
			return Shard{}, fmt.Errorf("--shard auto: %s is set (a Kubernetes Indexed Job) but %s is not: set it in the Job's env to spec.completions", envK8sIndex, envShardCount)
		}
		v, err := envInts(getenv, envK8sIndex, envShardCount)
		if err != nil {
			return Shard{}, fmt.Errorf("--shard auto (Kubernetes Indexed Job): %w", err)
		}
		return checkShard(v[0], v[1], fmt.Sprintf("--shard auto (%s=%d, %s=%d)", envK8sIndex, v[0], envShardCount, v[1]))
	}
	return Shard{}, ErrNoShardEnv
}

// envInts reads integer environment variables.
func envInts(getenv func(string) string, names ...string) ([]int, error) {
	out := make([]int, len(names))
	for i, name := range names {
		s := getenv(name)
		if s == "" {
			return nil, fmt.Errorf("%s is not set", name)
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("%s=%q is not an integer", name, s)
		}
		out[i] = n
	}
	return out, nil
}

// Path replaces {shard} in a path with the shard's index (out/part-{shard}.jsonl →
// out/part-3.jsonl), so every array task can be given the same name.
func (s Shard) Path(path string) (string, error) {
	if !strings.Contains(path, "{shard}") {
		return path, nil
	}
	if s.All() {
		return "", fmt.Errorf("%q: {shard} in a file name needs --shard", path)
	}
	return strings.ReplaceAll(path, "{shard}", strconv.Itoa(s.I)), nil
}
