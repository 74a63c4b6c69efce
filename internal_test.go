package gojev

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/testenv"
)

// byteRuntime is a model-free runtime: one token per byte, every listed letter equally likely.
type byteRuntime struct{}

func (byteRuntime) Name() string     { return "bytes" }
func (byteRuntime) Renderer() string { return "bytes" }
func (byteRuntime) Render(_ context.Context, msgs []contract.ChatMessage) (string, error) {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role + ": " + m.Content + "\n")
	}
	return b.String(), nil
}
func (byteRuntime) Tokenize(_ context.Context, text string, _ bool) ([]int32, error) {
	out := make([]int32, len(text))
	for i := range len(text) {
		out[i] = int32(text[i])
	}
	return out, nil
}
func (byteRuntime) Detokenize(_ context.Context, toks []int32) (string, error) {
	b := make([]byte, len(toks))
	for i, t := range toks {
		b[i] = byte(t)
	}
	return string(b), nil
}
func (byteRuntime) NextToken(_ context.Context, prompt, ids []int32) (backend.Readout, error) {
	r := backend.Readout{Decoded: len(prompt)}
	for range ids {
		r.Logits = append(r.Logits, 0)
		r.Logprobs = append(r.Logprobs, -math.Log(256))
	}
	return r, nil
}
func (byteRuntime) TemplateTime() time.Time { return time.Time{} }
func (byteRuntime) Close() error            { return nil }

// TestARowIsValidatedOnce: a decision validates its row once, however many prompts it
// renders (8 cyclic permutations here; a knockout's passes), and New checks its options once.
// (Each permutation's render validated it again: 1 + 8 times.)
func TestARowIsValidatedOnce(t *testing.T) {
	var validations, checks int
	defer func(v func(contract.Row) error, c func(Options) error) { validate, checkOptions = v, c }(validate, checkOptions)
	validate = func(r contract.Row) error { validations++; return r.Validate() }
	checkOptions = func(o Options) error { checks++; return o.check() }

	d, err := New(context.Background(), byteRuntime{}, Options{Debias: debias.Cyclic})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, checks, "New checks its options once")
	validations = 0
	var opts []contract.Option
	for i := range 8 {
		opts = append(opts, contract.Option{ID: fmt.Sprint("o", i), Description: fmt.Sprint("Option ", i)})
	}
	res, err := d.Decide(context.Background(), contract.Row{ID: "r", State: "s", Question: "q", Options: opts})
	require.NoError(t, err)
	assert.Len(t, res.Debias.Permutations, 7)
	assert.Equal(t, 1, validations, "one validation for the row and its 8 permutations")

	k, err := New(context.Background(), byteRuntime{}, Options{})
	require.NoError(t, err)
	defer k.Close()
	validations = 0
	var many []contract.Option
	for i := range 40 {
		many = append(many, contract.Option{ID: fmt.Sprint("o", i), Description: fmt.Sprint("Option ", i)})
	}
	res, err = k.Decide(context.Background(), contract.Row{ID: "k", State: "s", Question: "q", Options: many})
	require.NoError(t, err)
	assert.Len(t, res.Knockout.Passes, 4)
	assert.Equal(t, 1, validations, "one validation for a knockout and its passes")
}

// TestOpenChecksItsOptionsOnce: Open checks the options, then builds the Decider without
// checking them again (it went through New, which checked them a second time).
func TestOpenChecksItsOptionsOnce(t *testing.T) {
	checks := 0
	defer func(c func(Options) error) { checkOptions = c }(checkOptions)
	checkOptions = func(o Options) error { checks++; return o.check() }
	d, err := Open(context.Background(), testenv.SmallModel(t), Options{NThreads: 2})
	require.NoError(t, err)
	defer d.Close()
	assert.Equal(t, 1, checks)
}
