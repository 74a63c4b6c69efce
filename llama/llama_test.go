package llama_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/gguf"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

// llama.cpp warns about the test vocab files' metadata; testenv.Main keeps its log to errors.
func TestMain(m *testing.M) {
	modelFile = testenv.ExampleModel()
	testenv.Main(m)
}

func TestNativeLogGoesThroughSlog(t *testing.T) {
	var buf bytes.Buffer
	llama.SetLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	defer llama.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	m := loadStories(t)
	require.NoError(t, m.Close())
	out := buf.String()
	assert.Contains(t, out, "source=llama.cpp")
	assert.Contains(t, out, "llama_model_loader", "the model loader's INFO lines arrive at slog's debug level")
}

// TestALoadIsQuietAtInfo: loading the default model (Qwen2.5, whose GGUF makes llama.cpp warn
// about a "control-looking token" it corrects itself) logs nothing at slog's default level,
// and that line still arrives at the debug level.
func TestALoadIsQuietAtInfo(t *testing.T) {
	path := testenv.DefaultModel(t)
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{{slog.LevelInfo, ""}, {slog.LevelDebug, "level=DEBUG msg=\"load: control-looking token"}} {
		var buf bytes.Buffer
		llama.SetLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
		m, err := llama.LoadModel(path, llama.DefaultModelParams())
		require.NoError(t, err)
		require.NoError(t, m.Close())
		if tc.want == "" {
			assert.Empty(t, buf.String(), "at %v", tc.level)
		} else {
			assert.Contains(t, buf.String(), tc.want)
		}
	}
	llama.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
}

func loadStories(t *testing.T) *llama.Model {
	t.Helper()
	path := testenv.SharedData(t, "models/stories260K.gguf")
	m, err := llama.LoadModel(path, llama.DefaultModelParams())
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

func newContext(t *testing.T, m *llama.Model, p llama.ContextParams) *llama.Context {
	t.Helper()
	c, err := llama.NewContext(m, p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// decodeAlone decodes tokens as sequence 0 of a fresh cache and returns the last row's logits.
func decodeAlone(t *testing.T, c *llama.Context, tokens []llama.Token) []float32 {
	t.Helper()
	require.NoError(t, c.MemoryClear())
	b, err := llama.NewBatch(len(tokens), 1)
	require.NoError(t, err)
	defer b.Close()
	last := 0
	for i, tok := range tokens {
		last, err = b.Add(tok, i, []int{0}, i == len(tokens)-1)
		require.NoError(t, err)
	}
	require.NoError(t, c.Decode(context.Background(), b))
	logits, err := c.Logits(last)
	require.NoError(t, err)
	return logits
}

func TestStoriesModelVocab(t *testing.T) {
	m := loadStories(t)
	v := m.Vocab()
	assert.Equal(t, 512, v.NVocab())
	bos, err := v.BOSText()
	require.NoError(t, err)
	assert.Equal(t, "<s>", bos)
	eos, err := v.EOSText()
	require.NoError(t, err)
	assert.Equal(t, "</s>", eos)

	text := "Once upon a time, there was a little girl."
	toks, err := v.Tokenize(text, false, false)
	require.NoError(t, err)
	require.NotEmpty(t, toks)
	back, err := v.Detokenize(toks, false, false)
	require.NoError(t, err)
	// SentencePiece adds a leading space when tokenizing; detokenizing removes it again.
	assert.Equal(t, text, back)

	withBOS, err := v.Tokenize(text, true, false)
	require.NoError(t, err)
	assert.Equal(t, v.BOS(), withBOS[0])
	assert.Equal(t, toks, withBOS[1:])

	_, ok, err := m.ChatTemplate("")
	require.NoError(t, err)
	assert.False(t, ok, "stories260K has no chat template")
	arch, ok, err := m.Meta("general.architecture")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "llama", arch)
}

func TestTokenIDsAreRangeChecked(t *testing.T) {
	v := loadStories(t).Vocab()
	for _, tok := range []llama.Token{-1, 512, 1 << 30} {
		_, err := v.TokenToPiece(tok, false)
		assert.ErrorIs(t, err, llama.ErrToken, "token %d", tok)
		_, err = v.Detokenize([]llama.Token{1, tok}, false, false)
		assert.ErrorIs(t, err, llama.ErrToken, "token %d", tok)
	}
}

func TestDecodeIsDeterministic(t *testing.T) {
	m := loadStories(t)
	c := newContext(t, m, llama.ContextParams{NCtx: 256, NBatch: 64, NThreads: 2})
	toks, err := m.Vocab().Tokenize("One day, a little fox", true, false)
	require.NoError(t, err)
	first := decodeAlone(t, c, toks)
	second := decodeAlone(t, c, toks)
	require.Len(t, first, 512)
	assert.Equal(t, first, second, "the same tokens twice must give the same logits")
	// Logits are real numbers, not a zeroed buffer.
	var maxAbs float32
	for _, x := range first {
		maxAbs = max(maxAbs, x, -x)
	}
	assert.Greater(t, maxAbs, float32(0.1))
}

func TestBatchOfTwoSequencesMatchesEachAlone(t *testing.T) {
	m := loadStories(t)
	c := newContext(t, m, llama.ContextParams{NCtx: 512, NBatch: 128, NSeqMax: 2, NThreads: 2})
	v := m.Vocab()
	a, err := v.Tokenize("The cat sat on the mat", true, false)
	require.NoError(t, err)
	b, err := v.Tokenize("Lily wanted to play outside with her ball", true, false)
	require.NoError(t, err)
	aloneA := decodeAlone(t, c, a)
	aloneB := decodeAlone(t, c, b)

	require.NoError(t, c.MemoryClear())
	batch, err := llama.NewBatch(len(a)+len(b), 1)
	require.NoError(t, err)
	defer batch.Close()
	var rowA, rowB int
	for i, tok := range a {
		rowA, err = batch.Add(tok, i, []int{0}, i == len(a)-1)
		require.NoError(t, err)
	}
	for i, tok := range b {
		rowB, err = batch.Add(tok, i, []int{1}, i == len(b)-1)
		require.NoError(t, err)
	}
	require.NoError(t, c.Decode(context.Background(), batch))
	gotA, err := c.Logits(rowA)
	require.NoError(t, err)
	gotB, err := c.Logits(rowB)
	require.NoError(t, err)
	assert.InDeltaSlice(t, aloneA, gotA, 1e-4)
	assert.InDeltaSlice(t, aloneB, gotB, 1e-4)
	assert.NotEqual(t, gotA, gotB)

	_, err = c.Logits(0)
	assert.ErrorIs(t, err, llama.ErrNoLogits, "row 0 was not flagged")
}

func TestDecodeValidatesTheBatch(t *testing.T) {
	m := loadStories(t)
	c := newContext(t, m, llama.ContextParams{NCtx: 128, NBatch: 8, NSeqMax: 2, NThreads: 1})
	cases := []struct {
		name string
		fill func(b *llama.Batch)
	}{
		{"empty", func(*llama.Batch) {}},
		{"token out of range", func(b *llama.Batch) { _, _ = b.Add(9999, 0, []int{0}, true) }},
		{"seq id out of range", func(b *llama.Batch) { _, _ = b.Add(1, 0, []int{5}, true) }},
		{"over n_batch", func(b *llama.Batch) {
			for i := range 9 {
				_, _ = b.Add(1, i, []int{0}, false)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := llama.NewBatch(16, 1)
			require.NoError(t, err)
			defer b.Close()
			tc.fill(b)
			assert.ErrorIs(t, c.Decode(context.Background(), b), llama.ErrBatch)
		})
	}
}

func TestDecodeHonoursCancellation(t *testing.T) {
	m := loadStories(t)
	c := newContext(t, m, llama.ContextParams{NCtx: 64, NBatch: 8, NThreads: 1})
	b, err := llama.NewBatch(1, 1)
	require.NoError(t, err)
	defer b.Close()
	_, err = b.Add(1, 0, []int{0}, true)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = c.Decode(ctx, b)
	assert.ErrorIs(t, err, llama.ErrAborted)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestKVCacheFullIsAnError(t *testing.T) {
	m := loadStories(t)
	c := newContext(t, m, llama.ContextParams{NCtx: 16, NBatch: 16, NThreads: 1})
	t.Logf("n_ctx 16 became %d", c.NCtx())
	b, err := llama.NewBatch(16, 1)
	require.NoError(t, err)
	defer b.Close()
	for round := range c.NCtx()/16 + 2 {
		b.Clear()
		for i := range 16 {
			_, err := b.Add(1, round*16+i, []int{0}, i == 15)
			require.NoError(t, err)
		}
		if err = c.Decode(context.Background(), b); err != nil {
			break
		}
	}
	var de *llama.DecodeError
	require.ErrorAs(t, err, &de)
	assert.Equal(t, 1, de.Code)
	assert.ErrorIs(t, err, llama.ErrNoKVSlot)
}

func TestLoadRejectsBadFiles(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.gguf")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	notGGUF := filepath.Join(dir, "text.gguf")
	require.NoError(t, os.WriteFile(notGGUF, []byte("this is not a model file at all"), 0o644))
	data, err := os.ReadFile(testenv.SharedData(t, "models/stories260K.gguf"))
	require.NoError(t, err)
	truncated := filepath.Join(dir, "truncated.gguf")
	require.NoError(t, os.WriteFile(truncated, data[:len(data)/2], 0o644))

	for _, path := range []string{filepath.Join(dir, "missing.gguf"), dir, empty, notGGUF, truncated} {
		m, err := llama.LoadModel(path, llama.DefaultModelParams())
		assert.Nil(t, m)
		assert.ErrorIs(t, err, llama.ErrLoad, path)
	}
	_, err = llama.LoadModel(truncated, llama.DefaultModelParams())
	assert.True(t, errors.Is(err, gguf.ErrTruncated) || errors.Is(err, gguf.ErrCorrupt), "%v", err)
}

func TestHandlesAreFreedOnClose(t *testing.T) {
	path := testenv.SharedData(t, "models/stories260K.gguf")
	m0, c0, b0 := llama.Live()
	m, err := llama.LoadModel(path, llama.DefaultModelParams())
	require.NoError(t, err)
	c, err := llama.NewContext(m, llama.ContextParams{NCtx: 64, NThreads: 1})
	require.NoError(t, err)
	b, err := llama.NewBatch(4, 1)
	require.NoError(t, err)
	m1, c1, b1 := llama.Live()
	assert.Equal(t, [3]int64{m0 + 1, c0 + 1, b0 + 1}, [3]int64{m1, c1, b1})
	require.NoError(t, b.Close())
	require.NoError(t, c.Close())
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "Close is idempotent")
	m2, c2, b2 := llama.Live()
	assert.Equal(t, [3]int64{m0, c0, b0}, [3]int64{m2, c2, b2})
	_, err = m.Vocab().Tokenize("x", false, false)
	assert.ErrorIs(t, err, llama.ErrClosed)
	assert.ErrorIs(t, c.Decode(context.Background(), b), llama.ErrClosed)
}

// TestVocabFilesReproduceUpstreamTokenization runs llama.cpp's own tokenizer test vectors
// (models/ggml-vocab-*.gguf with .inp/.out, as tests/test-tokenizer-0.cpp reads them:
// add_special=false, parse_special=false).
func TestVocabFilesReproduceUpstreamTokenization(t *testing.T) {
	dir := filepath.Join(testenv.LlamaCppDir(t), "models")
	outs, err := filepath.Glob(filepath.Join(dir, "ggml-vocab-*.gguf.out"))
	require.NoError(t, err)
	require.NotEmpty(t, outs)
	total := 0
	for _, out := range outs {
		vocabPath := strings.TrimSuffix(out, ".out")
		t.Run(filepath.Base(vocabPath), func(t *testing.T) {
			inp, err := os.ReadFile(vocabPath + ".inp")
			require.NoError(t, err)
			want, err := os.ReadFile(out)
			require.NoError(t, err)
			texts := splitVocabTests(string(inp))
			lines := strings.Split(strings.TrimSuffix(string(want), "\n"), "\n")
			require.Len(t, lines, len(texts))

			p := llama.DefaultModelParams()
			p.VocabOnly = true
			m, err := llama.LoadModel(vocabPath, p)
			require.NoError(t, err)
			defer m.Close()
			for i, text := range texts {
				got, err := m.Vocab().Tokenize(text, false, false)
				require.NoError(t, err)
				var expect []llama.Token
				for f := range strings.FieldsSeq(lines[i]) {
					n, err := strconv.Atoi(f)
					require.NoError(t, err)
					expect = append(expect, llama.Token(n))
				}
				if len(expect) == 0 {
					expect = []llama.Token{}
				}
				assert.Equal(t, expect, got, "input %d %q", i, text)
				total++
			}
		})
	}
	t.Logf("%d vocab files, %d tokenizations reproduced", len(outs), total)
}

func splitVocabTests(raw string) []string {
	const sep = "\n__ggml_vocab_test__\n"
	var out []string
	for pos := 0; pos < len(raw); {
		next := strings.Index(raw[pos:], sep)
		if next < 0 {
			out = append(out, raw[pos:])
			break
		}
		out = append(out, raw[pos:pos+next])
		pos += next + len(sep)
	}
	return out
}

// A CPU build registers the CPU as a device of the CPU backend, with the system's memory.
func TestDevicesListsTheCPU(t *testing.T) {
	devs := llama.Devices()
	require.NotEmpty(t, devs)
	var cpu *llama.Device
	for i := range devs {
		if devs[i].Type == llama.DeviceCPU {
			cpu = &devs[i]
		}
	}
	require.NotNil(t, cpu, "devices: %+v", devs)
	assert.Equal(t, "CPU", cpu.Backend)
	assert.NotEmpty(t, cpu.Name)
	assert.NotEmpty(t, cpu.Description, "the processor's name")
	assert.False(t, cpu.GPU())
	assert.Positive(t, cpu.TotalBytes)
	assert.LessOrEqual(t, cpu.FreeBytes, cpu.TotalBytes)
	t.Logf("devices: %+v", devs)
}
