package gojev_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/stretchr/testify/require"
)

// The root package's external tests share these: TestMain, and the small model and example
// rows most tests decide. The model-free runtime is backend/backendtest's Scripted.

func TestMain(m *testing.M) {
	modelFile = testenv.ExampleModel()
	testenv.Main(m)
}

func openDefault(t *testing.T, opts gojev.Options) *gojev.Decider {
	t.Helper()
	if opts.Runtime.NThreads == 0 {
		opts.Runtime.NThreads = 2
	}
	d, err := gojev.Open(context.Background(), testenv.SmallModel(t), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	return d
}

func exampleRows(t *testing.T) []contract.Row {
	return testenv.Rows(t, filepath.Join(testenv.RepoRoot(t), "examples", "tickets.jsonl"), 100)
}
