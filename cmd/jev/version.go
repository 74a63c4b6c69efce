package main

import (
	"fmt"
	"io"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/cache"
)

// printVersion answers jev --version.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "jev (gojev) %s\nllama.cpp %s\ndefault model %s (make model; $JEV_MODEL overrides)\n",
		batch.Version(), batch.LlamaCppVersion(), cache.DefaultModelFile)
}
