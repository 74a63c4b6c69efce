// Command gojev-native builds the native libraries gojev links (the pinned llama.cpp as static
// libraries) when gojev is a dependency of your own Go module, and prints the environment that
// lets a plain `go build` find them.
//
// In your module, after `go get github.com/gojev/gojev`:
//
//	eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"
//	go build ./...
//
// install (the default subcommand) runs third_party/build-native.sh from the gojev module's
// folder (read-only in the module cache; the script needs no exec bit and writes only to the
// cache). The first time, it fetches the pinned llama.cpp (npm package node-llama-cpp, verified
// by sha256) and builds it with cmake, which takes a few minutes; then the build is found in the
// cache and install takes well under a second. It prints only shell lines on stdout, e.g.
//
//	export CGO_ENABLED=1
//	export CGO_CFLAGS="-O2 -g -I/home/you/.cache/gojev/native/561120ee9a5fe406/include"
//	export CGO_LDFLAGS="-L/home/you/.cache/gojev/native/561120ee9a5fe406/lib"
//
// The -l flags come from the #cgo directives of package llama; only the search paths are
// needed. Progress goes to stderr, and a copy of it to <cache>/gojev-native.log.
//
// env prints the same lines for a build that is already there, without fetching or building,
// and fails when there is none (e.g. in a shell profile or a CI step after install).
//
// The cache is $GOJEV_CACHE, default ~/.cache/gojev (--cache DIR overrides it): native/<key> holds
// lib/ and include/, keyed by the pinned llama.cpp commit, CMakeLists.txt, csrc/, the patches,
// the backend flags, the compiler and the machine; src/<commit> holds the fetched source. A
// checkout of gojev on the same machine (`make`) shares the entries.
//
// Needs bash, git, cmake, a C/C++ compiler and, for the first fetch, npm. GOJEV_CUDA=1 or
// GOJEV_METAL=1 in the environment build a GPU backend (then build your program with -tags cuda
// or -tags metal); GOJEV_NATIVE_CPU=1 tunes for this CPU; JOBS sets the build parallelism.
package main
