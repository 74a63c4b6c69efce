package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/gojev/gojev/llama"
)

// jevVersion is gojev's module version and, for a build from a checkout, its commit
// (runtime/debug.ReadBuildInfo: "(devel) 1a2b3c4d5e6f" or "(devel) 1a2b3c4d5e6f+dirty").
func jevVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version // "(devel)" in a checkout, else the module version (a pseudo-version names the commit)
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev != "" && v == "(devel)" {
		v += " " + rev[:min(12, len(rev))] + dirty
	}
	return v
}

// llamaVersion is the pinned llama.cpp: tag and commit.
func llamaVersion() string { return llama.LlamaCppTag + " (" + llama.LlamaCppCommit[:12] + ")" }

// printVersion answers jev --version.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "jev (gojev) %s\nllama.cpp %s\ndefault model %s (make model; $JEV_MODEL overrides)\n",
		jevVersion(), llamaVersion(), defaultModelFile)
}
