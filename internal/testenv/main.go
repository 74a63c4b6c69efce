package testenv

import (
	"context"
	"log/slog"
	"os"
	"testing"
)

// Main is a test package's TestMain: it runs the tests with llama.cpp's log lines below the
// error level dropped (a model load logs dozens through slog.Default, which package llama
// writes to unless a program calls llama.SetLogger; they carry source=llama.cpp), every other
// slog record and the log package's output kept, and exits with the tests' code.
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
func Main(m *testing.M) {
	slog.SetDefault(slog.New(quietNative{slog.NewTextHandler(os.Stderr, nil)}))
	// The PriDe priors runs keep (debias.DefaultStore) go to a folder of this test binary's
	// own, so that no test reads what another run kept; jev processes the tests start
	// inherit it.
	priors, err := os.MkdirTemp("", "gojev-priors-")
	if err != nil {
		panic(err)
	}
	os.Setenv("GOJEV_PRIORS", priors)
	code := m.Run()
	os.RemoveAll(priors)
	os.Exit(code)
}

// quietNative drops the records of llama.cpp (source=llama.cpp) below slog.LevelError.
type quietNative struct{ slog.Handler }

func (h quietNative) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelError {
		native := false
		r.Attrs(func(a slog.Attr) bool {
			native = a.Key == "source" && a.Value.String() == "llama.cpp"
			return !native
		})
		if native {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietNative) WithAttrs(as []slog.Attr) slog.Handler {
	return quietNative{h.Handler.WithAttrs(as)}
}

func (h quietNative) WithGroup(name string) slog.Handler {
	return quietNative{h.Handler.WithGroup(name)}
}
