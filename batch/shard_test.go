package batch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/batch"
)

func TestParseShard(t *testing.T) {
	slurm := func(id, lo, hi, count string) map[string]string {
		return map[string]string{"SLURM_ARRAY_TASK_ID": id, "SLURM_ARRAY_TASK_MIN": lo, "SLURM_ARRAY_TASK_MAX": hi, "SLURM_ARRAY_TASK_COUNT": count}
	}
	for _, tc := range []struct {
		name    string
		spec    string
		env     map[string]string
		want    batch.Shard
		wantErr string
	}{
		{"none", "", nil, batch.Shard{}, ""},
		{"I/N", "2/4", nil, batch.Shard{I: 2, N: 4}, ""},
		{"one shard", "0/1", nil, batch.Shard{I: 0, N: 1}, ""},
		{"I = N", "4/4", nil, batch.Shard{}, "want 0 ≤ I < N, got shard 4 of 4"},
		{"negative", "-1/4", nil, batch.Shard{}, "want 0 ≤ I < N"},
		{"zero shards", "0/0", nil, batch.Shard{}, "want 0 ≤ I < N"},
		{"not I/N", "2", nil, batch.Shard{}, "want I/N"},
		{"words", "a/b", nil, batch.Shard{}, "want I/N"},
		{"Slurm, from 0", "auto", slurm("3", "0", "3", "4"), batch.Shard{I: 3, N: 4}, ""},
		{"Slurm, from 1", "auto", slurm("1", "1", "8", "8"), batch.Shard{I: 0, N: 8}, ""},
		{"Slurm, from 5", "auto", slurm("7", "5", "8", "4"), batch.Shard{I: 2, N: 4}, ""},
		{"Slurm, a step", "auto", slurm("4", "0", "6", "4"), batch.Shard{}, "the Slurm array 0-6 has 4 tasks"},
		{"Slurm, no count", "auto", map[string]string{"SLURM_ARRAY_TASK_ID": "1", "SLURM_ARRAY_TASK_MIN": "0", "SLURM_ARRAY_TASK_MAX": "3"}, batch.Shard{}, "SLURM_ARRAY_TASK_COUNT is not set"},
		{"Slurm, not a number", "auto", slurm("x", "0", "3", "4"), batch.Shard{}, `SLURM_ARRAY_TASK_ID="x" is not an integer`},
		{"Kubernetes", "auto", map[string]string{"JOB_COMPLETION_INDEX": "2", "JEV_SHARD_COUNT": "4"}, batch.Shard{I: 2, N: 4}, ""},
		{"Kubernetes, index 0", "auto", map[string]string{"JOB_COMPLETION_INDEX": "0", "JEV_SHARD_COUNT": "1"}, batch.Shard{I: 0, N: 1}, ""},
		{"Kubernetes, no count", "auto", map[string]string{"JOB_COMPLETION_INDEX": "2"}, batch.Shard{}, "JEV_SHARD_COUNT is not: set it in the Job's env to spec.completions"},
		{"Kubernetes, index past the count", "auto", map[string]string{"JOB_COMPLETION_INDEX": "4", "JEV_SHARD_COUNT": "4"}, batch.Shard{}, "got shard 4 of 4"},
		{"both", "auto", map[string]string{"JOB_COMPLETION_INDEX": "1", "JEV_SHARD_COUNT": "4", "SLURM_ARRAY_TASK_ID": "1"}, batch.Shard{}, "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set"},
		{"no scheduler", "auto", nil, batch.Shard{}, batch.ErrNoShardEnv.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := batch.ParseShard(tc.spec, func(k string) string { return tc.env[k] })
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The N shards of any input hold every line exactly once, and size counts each shard's lines.
func TestShardsPartitionTheInput(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 7} {
		for _, lines := range []int{0, 1, 2, 3, 5, 6, 12, 29} {
			owners := make([]int, lines+1)
			for i := range n {
				s := batch.Shard{I: i, N: n}
				count := 0
				for l := 1; l <= lines; l++ {
					if s.Has(l) {
						owners[l]++
						count++
						assert.Equal(t, i, batch.ShardOf(l, n))
					}
				}
				assert.Equal(t, count, s.Size(lines), "shard %s of %d lines", s, lines)
			}
			for l := 1; l <= lines; l++ {
				assert.Equal(t, 1, owners[l], "line %d of %d, %d shards", l, lines, n)
			}
		}
	}
	assert.True(t, batch.Shard{}.Has(17), "no --shard: every line")
	assert.Equal(t, 17, batch.Shard{}.Size(17))
}

func TestShardPath(t *testing.T) {
	p, err := batch.Shard{I: 3, N: 8}.Path("out/part-{shard}.jsonl")
	require.NoError(t, err)
	assert.Equal(t, "out/part-3.jsonl", p)
	p, err = batch.Shard{I: 3, N: 8}.Path("out.jsonl")
	require.NoError(t, err)
	assert.Equal(t, "out.jsonl", p)
	_, err = batch.Shard{}.Path("out/part-{shard}.jsonl")
	assert.ErrorContains(t, err, "{shard} in a file name needs --shard")
}
