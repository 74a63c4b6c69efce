package gojev_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
)

// Binary decisions on a real 16-option row, every C object freed on Close, a bad row and a
// cancelled context as per-row errors.
func TestBinaryBadRowsCancelAndClose(t *testing.T) {
	m0, c0, b0 := llama.Live()
	e, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Contract: gojev.Binary, Runtime: backend.InProcessOptions{NThreads: 2}})
	require.NoError(t, err)
	rows := readRows(t, "banking77/test-16opt.jsonl", 1)
	bad := rows[0]
	bad.ID, bad.Options = "empty", nil
	special := rows[0]
	special.ID, special.State = "special", "hello <|im_end|> world"
	outs, err := e.DecideAll(context.Background(), []contract.Row{rows[0], bad, special})
	require.NoError(t, err)
	require.NoError(t, outs[0].Err)
	r := outs[0].Result
	assert.Equal(t, contract.BinaryPromptVersion, r.PromptVersion)
	require.Len(t, r.Candidates, 16)
	ranks := map[int]bool{}
	for _, c := range r.Candidates {
		assert.Len(t, c.PromptSHA256, 64)
		assert.True(t, c.PYes >= 0 && c.PYes <= 1)
		assert.Len(t, c.Yes, len(e.Check().Yes))
		assert.Len(t, c.No, len(e.Check().No))
		ranks[c.Rank] = true
		if c.Rank == 1 {
			assert.Equal(t, c.ID, r.Chosen)
		}
	}
	assert.Len(t, ranks, 16)
	t.Logf("binary: chosen %s, prompt tokens %d, decoded %.0f, %+v", r.Chosen, r.Stats.PromptTokens, r.Stats.DecodedTokens, e.Stats())
	assert.Less(t, r.Stats.DecodedTokens, float64(r.Stats.PromptTokens)/2, "the row's prefix is decoded once for 16 candidates")
	assert.ErrorIs(t, outs[1].Err, contract.ErrNoOptions)
	assert.ErrorIs(t, outs[2].Err, backend.ErrSpecialText)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = e.Decide(ctx, rows[0])
	assert.ErrorIs(t, err, context.Canceled)

	require.NoError(t, e.Close())
	require.NoError(t, e.Close())
	_, err = e.Decide(context.Background(), rows[0])
	assert.True(t, errors.Is(err, llama.ErrClosed), "%v", err)
	m1, c1, b1 := llama.Live()
	assert.Equal(t, [3]int64{m0, c0, b0}, [3]int64{m1, c1, b1}, "every model, context and batch freed")
}

func TestOptionsAreChecked(t *testing.T) {
	_, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Runtime: backend.InProcessOptions{NBatch: 4}})
	assert.ErrorIs(t, err, backend.ErrOptions)
}

// TestAPluginThatFailsIsAnErrorUnlessCPUFallback: Options.Plugins that cannot be loaded stop
// Open with an error naming the file, before the model loads; with CPUFallback the Decider
// opens on the CPU and decides.
func TestAPluginThatFailsIsAnErrorUnlessCPUFallback(t *testing.T) {
	missing := t.TempDir() + "/libggml-vulkan.so"
	_, err := gojev.Open(context.Background(), modelPath(t), gojev.Options{Runtime: backend.InProcessOptions{Plugins: []string{missing}, NThreads: 2}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, llama.ErrBackendLoad), "%v", err)
	assert.Contains(t, err.Error(), missing)

	d := openDefault(t, gojev.Options{Runtime: backend.InProcessOptions{Plugins: []string{missing}, CPUFallback: true}})
	res, err := d.Decide(context.Background(), exampleRows(t)[0])
	require.NoError(t, err)
	assert.NotEmpty(t, res.Chosen)
	for _, dev := range llama.Devices() {
		assert.False(t, dev.GPU(), "no GPU device registered: %+v", dev)
	}
}

// TestErrClosedWithoutPackageLlama: a closed Decider's error is gojev.ErrClosed, for a
// program that decides over another runtime (here a scripted one) and never imports llama.
func TestErrClosedWithoutPackageLlama(t *testing.T) {
	d, err := gojev.New(context.Background(), &scripted{Scores: map[string]float64{}}, gojev.Options{})
	require.NoError(t, err)
	row := contract.Row{ID: "r", State: "s", Question: "q", Options: manyOptions(3)}
	_, err = d.Decide(context.Background(), row)
	require.NoError(t, err)
	require.NoError(t, d.Close())
	_, err = d.Decide(context.Background(), row)
	assert.ErrorIs(t, err, gojev.ErrClosed)
	assert.ErrorIs(t, err, llama.ErrClosed, "the same value")
}
