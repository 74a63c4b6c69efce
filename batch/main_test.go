package batch_test

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"testing"

	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

func TestMain(m *testing.M) {
	llama.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	// The examples decide on the small model. They cannot skip themselves: without the model
	// they are skipped here outside CI, saying why, and fail the run under CI.
	p, err := testenv.SmallModelPath()
	switch {
	case err == nil:
		modelFile = p
	case testenv.InCI():
		fmt.Fprintln(os.Stderr, "required under CI: the examples need the small model:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "skipping the examples outside CI:", err)
		_ = flag.Set("test.skip", "^Example")
	}
	os.Exit(m.Run())
}
