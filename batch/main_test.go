package batch_test

import (
	"log/slog"
	"os"
	"testing"

	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/llama"
)

func TestMain(m *testing.M) {
	llama.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})))
	modelFile = testenv.ExampleModel()
	os.Exit(m.Run())
}
