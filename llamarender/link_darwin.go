//go:build darwin

package llamarender

// As link_linux.go, for macOS (see llama/link_darwin.go). Untested here.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-blas -lggml-base -lc++ -framework Accelerate -framework Foundation
import "C"
