//go:build !cgo

package gojev

import (
	"context"
	"fmt"
)

// Open needs the in-process runtime, which links llama.cpp through cgo; this build has none,
// so it returns an error wrapping ErrNoCgo. Use New with backend.NewHTTP, or build with
// CGO_ENABLED=1 (see cmd/gojev-native).
func Open(_ context.Context, path string, _ Options) (*Decider, error) {
	return nil, fmt.Errorf("%w (opening %s): build with CGO_ENABLED=1 after eval \"$(go run github.com/gojev/gojev/cmd/gojev-native install)\", or decide over HTTP with gojev.New and backend.NewHTTP", ErrNoCgo, path)
}
