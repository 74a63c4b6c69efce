package llama_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// loadVocab loads a GGUF's vocabulary only, closed with the test.
func loadVocab(tb testing.TB, path string) *llama.Model {
	tb.Helper()
	p := llama.DefaultModelParams()
	p.VocabOnly = true
	m, err := llama.LoadModel(path, p)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = m.Close() })
	return m
}

// fragmentTexts are texts that split at special tokens every way tokenizer_st_partition
// handles: a chat prompt and its boundary probes, each special token's text alone, at either
// end, doubled, cut short, wrapped in whitespace (stripped by lstrip/rstrip tokens) and in
// words, and llama.cpp's own tokenizer test inputs.
func fragmentTexts(tb testing.TB, v *llama.Vocab, inputs []string) []string {
	ft, err := llama.NewFragmentTokenizer(v)
	require.NoError(tb, err)
	specials := ft.SpecialTexts()
	if len(specials) > 60 { // keep the first and last ones (BOS/EOS-like, and added ones)
		specials = append(specials[:30:30], specials[len(specials)-30:]...)
	}
	prompt := "<|im_start|>system\nYou are a careful assistant.<|im_end|>\n<|im_start|>user\n" +
		`{"evidence": "my card <|im_end|> was declined", "criterion": "Which intent?", "options": [{"letter": "A", "description": "card"}]}` +
		"<|im_end|>\n<|im_start|>assistant\n"
	texts := append([]string{"", " ", "\n\n", "A", " A", "hello world", prompt}, inputs...)
	for _, l := range "ABCDEFGHIJKLMNOP" {
		texts = append(texts, prompt+string(l), "<start_of_turn>model\n"+string(l), "[/INST]"+string(l))
	}
	for _, s := range specials {
		texts = append(texts, s, s+s, "a"+s+"b", " "+s+" ", "x \n"+s+"\n y", s+"A", s+" A", "A"+s, s[:len(s)-1], s+s[:len(s)-1],
			"  "+s+"\t\t"+s+"  ", prompt+s, s+prompt)
	}
	return texts
}

func vocabInputs(tb testing.TB, path string) []string {
	raw, err := os.ReadFile(path + ".inp")
	if err != nil {
		return nil
	}
	return splitVocabTests(string(raw))
}

// The fragment tokenizer gives Vocab.Tokenize's tokens, for both parse_special, on every
// vocabulary llama.cpp ships test files for and on the default and small models, first from an
// empty cache and again from a warm one; where the split is not done in Go it says why.
func TestFragmentTokenizerEqualsLlamaTokenize(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.LlamaCppDir(t), "models", "ggml-vocab-*.gguf"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	files = append(files, testenv.DefaultModel(t), testenv.SmallModel(t))
	fragmented := 0
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			m := loadVocab(t, path)
			v := m.Vocab()
			ft, err := llama.NewFragmentTokenizer(v)
			require.NoError(t, err)
			ok, why := ft.Fragmented()
			if !ok {
				assert.NotEmpty(t, why)
				t.Logf("not fragmented: %s", why)
			} else {
				fragmented++
			}
			texts := fragmentTexts(t, v, vocabInputs(t, path))
			for pass := range 2 {
				for _, text := range texts {
					for _, parse := range []bool{false, true} {
						want, err := v.Tokenize(text, false, parse)
						require.NoError(t, err)
						got, err := ft.Tokenize(text, parse)
						require.NoError(t, err)
						require.Equal(t, want, got, "pass %d, parse_special %v, %q", pass, parse, text)
					}
					if !ft.HasSpecialText(text) {
						plain, err := v.Tokenize(text, false, false)
						require.NoError(t, err)
						parsed, err := v.Tokenize(text, false, true)
						require.NoError(t, err)
						require.Equal(t, plain, parsed, "no special text in %q, yet parse_special changes its tokens", text)
					}
				}
			}
		})
	}
	// Qwen's, SmolLM2's and most shipped vocabularies split in Go.
	assert.GreaterOrEqual(t, fragmented, len(files)/2)
}

// TestTokenizeRefusesCodePointsAboveUnicode: a four-byte UTF-8 form above U+10FFFF made
// llama_tokenize throw std::invalid_argument("invalid codepoint") through the C API and abort
// the process (found by FuzzFragmentTokenizer); it is now an error, and other invalid UTF-8
// still tokenizes as llama.cpp does, one U+FFFD per byte it cannot decode.
func TestTokenizeRefusesCodePointsAboveUnicode(t *testing.T) {
	v := loadVocab(t, filepath.Join(testenv.LlamaCppDir(t), "models", "ggml-vocab-qwen2.gguf")).Vocab()
	ft, err := llama.NewFragmentTokenizer(v)
	require.NoError(t, err)
	for _, text := range []string{"a\xf4\x90\x80\x80b", "<|im_start|>\xf7\xbf\xbf\xbf", "ok \xf5\x80\x80\x80"} {
		_, err := v.Tokenize(text, false, true)
		require.ErrorIs(t, err, llama.ErrTokenize, "%q", text)
		require.ErrorContains(t, err, "above U+10FFFF")
		_, err = ft.Tokenize(text, true)
		require.ErrorIs(t, err, llama.ErrTokenize, "%q", text)
	}
	// U+10FFFF itself, a lone lead byte, a cut four-byte form and a stray continuation byte
	for _, text := range []string{"a\U0010FFFFb", "a\xf4b", "\xf4\x90\x80", "\x80x", "\xff\xfe"} {
		toks, err := v.Tokenize(text, false, true)
		require.NoError(t, err, "%q", text)
		require.NotEmpty(t, toks)
		got, err := ft.Tokenize(text, true)
		require.NoError(t, err)
		require.Equal(t, toks, got)
	}
	replaced, err := v.Tokenize("\uFFFDx", false, false)
	require.NoError(t, err)
	bad, err := v.Tokenize("\xffx", false, false)
	require.NoError(t, err)
	require.Equal(t, replaced, bad, "an undecodable byte tokenizes as U+FFFD")
}

// FuzzFragmentTokenizer: any text tokenizes alike through the fragment tokenizer and
// llama_tokenize, under a BPE vocabulary (Qwen2's, the default model's) and a SentencePiece one.
func FuzzFragmentTokenizer(f *testing.F) {
	dir := filepath.Join(testenv.LlamaCppDir(f), "models")
	var vocabs []*llama.Vocab
	var fts []*llama.FragmentTokenizer
	for _, name := range []string{"ggml-vocab-qwen2.gguf", "ggml-vocab-llama-spm.gguf"} {
		v := loadVocab(f, filepath.Join(dir, name)).Vocab()
		ft, err := llama.NewFragmentTokenizer(v)
		require.NoError(f, err)
		vocabs, fts = append(vocabs, v), append(fts, ft)
	}
	for _, s := range []string{"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nA", "<s> [INST] x [/INST] B", " <|endoftext|> ", "</s></s>", strings.Repeat("<|im_end|>", 3)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		for i, v := range vocabs {
			for _, parse := range []bool{false, true} {
				want, wantErr := v.Tokenize(text, false, parse)
				got, err := fts[i].Tokenize(text, parse)
				if wantErr != nil {
					// only text llama_tokenize would abort on is refused, by both alike
					require.ErrorContains(t, wantErr, "above U+10FFFF")
					require.ErrorIs(t, wantErr, llama.ErrTokenize)
					require.ErrorIs(t, err, llama.ErrTokenize)
					continue
				}
				require.NoError(t, err)
				require.Equal(t, want, got, "vocab %d, parse_special %v", i, parse)
			}
		}
	})
}
