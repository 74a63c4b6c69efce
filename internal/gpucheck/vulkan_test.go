package gpucheck_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/internal/app/bench"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

// lavapipeRows is how many example tickets are decided on lavapipe: two, decided together, so
// that their prompts are packed into one llama_decode. A prompt costs about a minute of CI for
// SmolLM2-135M on lavapipe on two cores (the CPU takes two seconds). (Under the binary
// contract the rarest yes/no spellings' log-probabilities move by up to 0.47: direct it is.)
const lavapipeRows = 2

// TestVulkanOnLavapipeMatchesTheCPU loads node-llama-cpp's prebuilt Vulkan plugin into the
// static CPU build, offloads every layer of the small model to lavapipe and decides example
// tickets there (packed, the default on a GPU) and on the CPU (one sequence): the plugin
// registers a GPU-type device, the model load reports every layer offloaded, the choices are
// the same and the options' log-probabilities agree within 0.5 (measured: 0.17, where Vulkan
// multiplies Q4_1 weights in fp16 and the CPU in q8_1 blocks).
// The figures go to $JEV_QUALITY_OUT/vulkan-lavapipe.json, which .ci/run prints.
func TestVulkanOnLavapipeMatchesTheCPU(t *testing.T) {
	plugin := testenv.VulkanPlugin(t)
	model := testenv.SmallModel(t)
	rows := testenv.Rows(t, filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl"), lavapipeRows)
	// ggml-vulkan skips CPU-type devices such as lavapipe unless they are named.
	t.Setenv("GGML_VK_VISIBLE_DEVICES", "0")
	ctx := context.Background()

	decide := func(opts gojev.Options) ([]*gojev.Result, time.Duration) {
		opts.Runtime.NThreads = 2
		d, err := gojev.Open(ctx, model, opts)
		require.NoError(t, err)
		defer d.Close()
		start := time.Now()
		outs, err := d.DecideAll(ctx, rows)
		require.NoError(t, err)
		var res []*gojev.Result
		for _, o := range outs {
			require.NoError(t, o.Err)
			res = append(res, o.Result)
		}
		return res, time.Since(start)
	}
	// The CPU first: once the plugin is loaded, its device stays registered.
	cpu, cpuTime := decide(gojev.Options{Runtime: backend.InProcessOptions{NoGPU: true}})

	logs := &lines{}
	llama.SetLogger(slog.New(logs))
	defer llama.SetLogger(nil)
	// Packed, the default where layers go to a GPU. (Packed against one sequence on lavapipe,
	// measured once: max |Δ logprob| 5.8e-6, same choices, 1.10× the speed; not repeated here,
	// since every lavapipe run costs minutes of CI.)
	gpu, gpuTime := decide(gojev.Options{Runtime: backend.InProcessOptions{Plugins: []string{plugin}}})
	for i := range rows {
		assert.Equal(t, backend.DecodeOneSequence, cpu[i].Decode)
		assert.Equal(t, backend.DecodePacked, gpu[i].Decode, "packed is the default where layers go to a GPU")
	}

	var vk *llama.Device
	for _, d := range llama.Devices() {
		if d.Backend == "Vulkan" && d.GPU() {
			vk = &d
			break
		}
	}
	require.NotNil(t, vk, "the plugin registers a Vulkan GPU device: %+v", llama.Devices())
	offload := logs.match(regexp.MustCompile(`offloaded (\d+)/(\d+) layers to GPU`))
	require.Len(t, offload, 3, "llama.cpp reports the offload")
	assert.Equal(t, offload[1], offload[2], "every layer offloaded")

	for i := range cpu {
		require.Len(t, gpu[i].Options, len(cpu[i].Options))
		assert.Equal(t, cpu[i].PromptSHA256, gpu[i].PromptSHA256, "the same prompt")
	}
	maxDelta, same := bench.Agreement(cpu, gpu)
	report := map[string]any{
		"model": filepath.Base(model), "plugin": plugin, "device": vk.Name + " " + vk.Description,
		"rows": len(cpu), "identical_choices": same, "max_abs_delta_logprob": maxDelta,
		"layers_offloaded": offload[1] + "/" + offload[2],
		"cpu_s":            cpuTime.Seconds(), "vulkan_s": gpuTime.Seconds(), "vulkan_decode": gpu[0].Decode,
	}
	t.Logf("Vulkan (%s, packed) vs CPU (one sequence) on %d rows: identical choices %d, max |Δ logprob| %.3g; %.1f s vs %.1f s",
		report["device"], len(cpu), same, maxDelta, gpuTime.Seconds(), cpuTime.Seconds())
	if dir := os.Getenv("JEV_QUALITY_OUT"); dir != "" {
		b, err := json.MarshalIndent(report, "", "  ")
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "vulkan-lavapipe.json"), append(b, '\n'), 0o644))
	}
	assert.Equal(t, len(cpu), same, "the same choices")
	assert.LessOrEqual(t, maxDelta, 0.5)
	assert.Greater(t, maxDelta, 0.0, "a different backend's arithmetic: were the layers really offloaded?")
}

// lines is a slog.Handler that keeps every message.
type lines struct {
	mu  sync.Mutex
	all []string
}

func (l *lines) Enabled(context.Context, slog.Level) bool { return true }
func (l *lines) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all = append(l.all, r.Message)
	return nil
}
func (l *lines) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *lines) WithGroup(string) slog.Handler      { return l }

// match returns the submatches of the first message re matches.
func (l *lines) match(re *regexp.Regexp) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range l.all {
		if s := re.FindStringSubmatch(m); s != nil {
			return s
		}
	}
	return nil
}
