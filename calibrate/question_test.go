package calibrate

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/debias"
)

// questionProfile fits a profile of one question's scoring from synthetic rows.
func questionProfile(t *testing.T, key string, seed uint64) *Profile {
	t.Helper()
	p, err := NewWith(debias.ModelID{File: "m.gguf", SHA256: strings.Repeat("a", 64)}, "direct-options-v1",
		map[string][]Sample{QuestionScoring(key): synthetic(40, 4, 0.5, seed)}, Config{})
	require.NoError(t, err)
	return p
}

// A folder of per-question profiles reads as one profile holding every question; a profile of
// another scoring, two files calibrating one question, another model's file and an empty
// folder are refused.
func TestLoadQuestions(t *testing.T) {
	k1, k2 := strings.Repeat("1", 64), strings.Repeat("2", 64)
	name, ok := IsQuestionScoring(QuestionScoring(k1))
	assert.True(t, ok)
	assert.Equal(t, k1, name)
	_, ok = IsQuestionScoring(ScoringPriDe)
	assert.False(t, ok)

	dir := t.TempDir()
	require.NoError(t, questionProfile(t, k1, 1).Save(filepath.Join(dir, "a.json")))
	require.NoError(t, questionProfile(t, k2, 2).Save(filepath.Join(dir, "b.json")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a profile"), 0o644))
	p, err := LoadQuestions(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{QuestionScoring(k1), QuestionScoring(k2)}, p.Names())
	assert.True(t, p.Questions())
	assert.Len(t, p.Sources, 2)
	assert.Len(t, p.SHA256, 64)
	one, err := LoadQuestions(filepath.Join(dir, "a.json"))
	require.NoError(t, err)
	assert.Equal(t, []string{QuestionScoring(k1)}, one.Names())
	assert.Equal(t, one.Sources[0].SHA256, one.SHA256, "a single file keeps its own sha256")

	dup := t.TempDir()
	require.NoError(t, questionProfile(t, k1, 1).Save(filepath.Join(dup, "a.json")))
	require.NoError(t, questionProfile(t, k1, 3).Save(filepath.Join(dup, "b.json")))
	_, err = LoadQuestions(dup)
	assert.ErrorIs(t, err, ErrProfile)
	assert.ErrorContains(t, err, "both calibrate")

	mixed := t.TempDir()
	rows, err := New(debias.ModelID{}, "direct-options-v1", map[string][]Sample{ScoringPriDe: synthetic(300, 4, 0.5, 4)}, DefaultFolds)
	require.NoError(t, err)
	require.NoError(t, rows.Save(filepath.Join(mixed, "rows.json")))
	_, err = LoadQuestions(mixed)
	assert.ErrorIs(t, err, ErrProfile)
	assert.ErrorContains(t, err, "only question:<sha256> scorings")

	models := t.TempDir()
	require.NoError(t, questionProfile(t, k1, 1).Save(filepath.Join(models, "a.json")))
	q2 := questionProfile(t, k2, 2)
	q2.Model.SHA256 = strings.Repeat("b", 64)
	require.NoError(t, q2.Save(filepath.Join(models, "b.json")))
	_, err = LoadQuestions(models)
	assert.ErrorIs(t, err, ErrMismatch)

	_, err = LoadQuestions(t.TempDir())
	assert.ErrorIs(t, err, fs.ErrNotExist)
}
