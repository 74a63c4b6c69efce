package main

import (
	"fmt"
	"io"

	"github.com/gojev/gojev/internal/cache"
	"github.com/gojev/gojev/internal/version"
)

// printVersion answers jev --version.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "jev (gojev) %s\nllama.cpp %s\ndefault model %s (make model; $GOJEV_MODEL overrides)\n",
		version.Jev(), version.LlamaCpp(), cache.DefaultModelFile)
}
