package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/llamaserver"
	"github.com/gojev/gojev/internal/testenv"
)

// TestGPUBenchScriptRunsOnTheCPU runs scripts/gpu-bench.sh as a GPU machine would, but on the
// CPU backend with the tiny synthetic shape: pack the bundle (at most 60 MB), unpack it
// elsewhere, run it from there, with the batch grid and the llama-bench make server built. Every
// bench file holds the engine, packed and sequential paths, packed results record their mode,
// every grid setting ran on the f16 model and on its Q4_K_M quantization (jev quantize), the
// grid reads each model's rate as a share of llama-bench's, and the run stays within the
// script's 9-minute budget.
func TestGPUBenchScriptRunsOnTheCPU(t *testing.T) {
	testenv.SyntheticModel(t, "tiny") // skips/fails, saying why, without python3, numpy or the tree
	root := testenv.RepoRoot(t)
	bin := buildJev(t)
	dir := t.TempDir()
	bundle := filepath.Join(dir, "gpu-bench.tar.gz")
	pack := exec.Command("bash", filepath.Join(root, "scripts", "gpu-bench.sh"), "pack", bundle)
	pack.Env = append(os.Environ(), "JEV_BIN="+bin)
	out, err := pack.CombinedOutput()
	require.NoError(t, err, "%s", out)
	fi, err := os.Stat(bundle)
	require.NoError(t, err)
	assert.Less(t, fi.Size(), int64(60<<20), "the bundle fits 60 MB")
	require.NoError(t, exec.Command("tar", "-C", dir, "-xzf", bundle).Run())

	start := time.Now()
	results := filepath.Join(dir, "results")
	lbench, err := llamaserver.FindBench(root)
	require.NoError(t, err)
	run := exec.Command("bash", filepath.Join(dir, "gpu-bench", "gpu-bench.sh"), "run", "--cpu", "--shape", "tiny", "--rows", "4", "--out", results,
		"--grid", "--llama-bench", lbench)
	out, err = run.CombinedOutput()
	require.NoError(t, err, "%s", out)
	elapsed := time.Since(start)
	t.Logf("gpu-bench.sh run --cpu --shape tiny --rows 4: %s\n%s", elapsed.Round(time.Second), out)
	assert.Less(t, elapsed, 9*time.Minute)
	for _, f := range []string{"direct-8opt.json", "direct-16opt.json", "binary-16opt.json", "shortlist-28opt.json"} {
		b, err := os.ReadFile(filepath.Join(results, f))
		require.NoError(t, err, f)
		var rep struct {
			Rows       int                      `json:"rows"`
			Engine     *struct{ Decode string } `json:"engine"`
			Packed     *struct{ Decode string } `json:"packed"`
			Sequential *struct{}                `json:"sequential"`
			Ratios     struct {
				PackedVsEngine float64 `json:"packed_vs_engine"`
			} `json:"ratios"`
		}
		require.NoError(t, json.Unmarshal(b, &rep), f)
		require.NotNil(t, rep.Engine, f)
		require.NotNil(t, rep.Packed, f)
		require.NotNil(t, rep.Sequential, f)
		assert.Equal(t, "one-sequence", rep.Engine.Decode, f)
		assert.Equal(t, "packed", rep.Packed.Decode, f)
		assert.Greater(t, rep.Ratios.PackedVsEngine, 0.0, f)
		assert.Equal(t, 4, rep.Rows, f)
	}
	grid, err := os.ReadFile(filepath.Join(results, "grid.md"))
	require.NoError(t, err)
	for _, model := range []string{"tiny-f16", "tiny-q4_k_m"} {
		for _, setting := range []string{"s16-b512 prepare", "s16-b512 engine", "s16-b512 packed", "s64-b2048 packed",
			"s128-b4096-ub1024-fa packed", "s128-b4096-ub1024-noprefix packed", "s128-b4096-ub1024-split packed", "s255-b8192-ub4096-fa packed"} {
			assert.Regexp(t, `\| `+model+` \| `+setting+` \| [0-9.]+ \|`, string(grid), "%s %s", model, setting)
		}
		assert.Regexp(t, `\| `+model+` \| llama-bench -p [0-9]+ \| \| [0-9]+ \| \| 100% \|`, string(grid), model)
		assert.Regexp(t, `\| `+model+` \| s16-b512 engine \| [0-9.]+ \| [0-9]+ \|\s+\| [0-9]+% \|`, string(grid), model)
	}
	assert.NotContains(t, string(out), "failed")
}
