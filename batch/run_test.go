package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/testenv"
)

// rowLine is testenv.RowLine: a row with n options o0..o(n-1).
var rowLine = testenv.RowLine

// cancelAfterFirstLine cancels the run as soon as the first output line is written, as a
// Ctrl-C during the second row would.
type cancelAfterFirstLine struct {
	bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelAfterFirstLine) Write(p []byte) (int, error) {
	defer w.cancel()
	return w.Buffer.Write(p)
}

func TestInterruptedRunLeavesWholeLines(t *testing.T) {
	d, err := gojev.Open(context.Background(), testenv.SmallModel(t), gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	require.NoError(t, err)
	defer d.Close()
	ctx, cancel := context.WithCancel(context.Background())
	out := &cancelAfterFirstLine{cancel: cancel}
	in := strings.Join([]string{rowLine("a", 2), rowLine("b", 2), rowLine("c", 2)}, "\n")
	sum, err := batch.Run(ctx, d, strings.NewReader(in), out, batch.Config{Window: 1})
	require.ErrorIs(t, err, context.Canceled)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 1, "only the finished row is written")
	assert.True(t, json.Valid([]byte(lines[0])))
	assert.Equal(t, 1, sum.Rows, "the dropped row is not counted")
	assert.Equal(t, 0, sum.Errors)
}
