package debias

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// defaultModel is the default model's sha256 (scripts/models.tsv), for which gojev ships a prior.
const defaultModel = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"

// Every shipped prior reads as a valid prior of the default model, sums to 1 per option count
// and says where it came from.
func TestShippedPriors(t *testing.T) {
	require.NotEmpty(t, shipped())
	for _, p := range shipped() {
		require.NoError(t, p.validate())
		assert.Equal(t, defaultModel, p.Model.SHA256)
		for k, lp := range p.ByOptions {
			assert.Len(t, lp.Prior, k)
			assert.NotEmpty(t, lp.Source, "k=%d", k)
			assert.GreaterOrEqual(t, lp.SampleRows, 10, "k=%d", k)
		}
	}
	p := Shipped(defaultModel, "direct-options-v1")
	require.NotNil(t, p)
	eight, ok := p.For(8)
	require.True(t, ok)
	assert.Less(t, eight[0], eight[1], "the default model's known shape: A rare, B favoured")
	assert.Nil(t, Shipped("ab", "direct-options-v1"))
	assert.Nil(t, Shipped(defaultModel, "binary-candidates-v1"))
}

// A Store keeps what runs add, option count by option count, over the shipped prior; a model
// it has nothing for reads nil; a corrupt file is ErrPriorFile with the shipped prior kept.
func TestStore(t *testing.T) {
	s := Store{Dir: t.TempDir()}
	other := ModelID{File: "m.gguf", SHA256: "ab"}
	got, err := s.Load(other, "direct-options-v1")
	require.NoError(t, err)
	assert.Nil(t, got)
	mk := func(model ModelID, k int) *Prior {
		p := make([]float64, k)
		for i := range p {
			p[i] = 1 / float64(k)
		}
		return &Prior{Method: PriDe, Reference: Reference, PromptVersion: "direct-options-v1", Model: model,
			ByOptions: map[int]LetterPrior{k: {Letters: Letters(k), Prior: p, SampleRows: 10}}}
	}
	require.NoError(t, s.Add(mk(other, 3)))
	require.NoError(t, s.Add(mk(other, 5)))
	got, err = s.Load(other, "direct-options-v1")
	require.NoError(t, err)
	assert.Len(t, got.ByOptions, 2, "3 and 5 options, each from its run")
	none, err := s.Load(other, "direct-options-guarded-v1")
	require.NoError(t, err)
	assert.Nil(t, none, "another contract")

	def := ModelID{File: "qwen.gguf", SHA256: defaultModel}
	got, err = s.Load(def, "direct-options-v1")
	require.NoError(t, err)
	assert.Equal(t, Shipped(defaultModel, "direct-options-v1").ByOptions, got.ByOptions, "nothing kept: the shipped prior")
	mine := mk(def, 8)
	require.NoError(t, s.Add(mine))
	got, err = s.Load(def, "direct-options-v1")
	require.NoError(t, err)
	assert.Equal(t, mine.ByOptions[8], got.ByOptions[8], "a kept option count overrides the shipped one")
	kept, err := s.Kept(def, "direct-options-v1")
	require.NoError(t, err)
	assert.Len(t, kept.ByOptions, 1)

	require.NoError(t, os.WriteFile(s.Path(def, "direct-options-v1"), []byte("{"), 0o644))
	got, err = s.Load(def, "direct-options-v1")
	assert.ErrorIs(t, err, ErrPriorFile)
	assert.Equal(t, Shipped(defaultModel, "direct-options-v1").ByOptions, got.ByOptions)
	assert.Equal(t, "", Store{}.Path(def, "direct-options-v1"))
	assert.Equal(t, "", s.Path(ModelID{SHA256: "../x"}, "direct-options-v1"), "no path out of the folder")
	assert.NoError(t, Store{}.Add(mine), "a zero Store keeps nothing")
}
