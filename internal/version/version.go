// Package version names the gojev build and the llama.cpp it is pinned to, as run files record
// them and jev version prints them.
package version

import (
	"cmp"
	"runtime/debug"

	"github.com/gojev/gojev/llama"
)

// modulePath is gojev's module, as build info names it.
const modulePath = "github.com/gojev/gojev"

// Jev is gojev's version, from the running program's build info: when gojev is the program's
// own module (jev, built in a checkout), "(devel)" and the commit ("(devel) 1a2b3c4d5e6f",
// "+dirty" for uncommitted changes); when it is a dependency (a program embedding gojev), the
// version it requires (a tag, or a pseudo-version naming the commit). "unknown" without build
// info.
func Jev() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	if info.Main.Path != modulePath {
		for _, d := range info.Deps {
			if d.Path == modulePath {
				if d.Replace != nil {
					d = d.Replace
				}
				return cmp.Or(d.Version, "(devel)")
			}
		}
	}
	v := info.Main.Version // "(devel)" in a checkout, else the module version
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

// LlamaCpp is the pinned llama.cpp: its tag and commit, "v0.4.0 (80fb11ac73e6)".
func LlamaCpp() string { return llama.LlamaCppTag + " (" + llama.LlamaCppCommit[:12] + ")" }
