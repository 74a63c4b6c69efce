//go:build !cgo

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/cli"
)

// Stand-ins for native.go in a build without cgo: jev decides over --runtime URL only, and
// the commands that need the in-process runtime say so.

// errNeedsCgo: this jev was built with CGO_ENABLED=0.
var errNeedsCgo = errors.New("this jev was built without cgo (CGO_ENABLED=0), so it cannot load a model in-process: decide through a llama-server with --runtime URL, or build jev with make (cgo and the llama.cpp libraries)")

func setNativeLogger(*slog.Logger) {}

func printInProcess(io.Writer, *gojev.Decider, int) {}

func runParity(context.Context, []string, io.Writer, io.Writer) error {
	return cli.Usage(errors.Join(errors.New("jev parity compares the in-process runtime with llama-server"), errNeedsCgo))
}

func quantize(string, string, string, int) error { return cli.Usage(errNeedsCgo) }
