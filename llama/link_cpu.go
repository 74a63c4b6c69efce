//go:build linux && !cuda

package llama

// CPU backend on Linux: the link order measured to work with the static build (llama.cpp's
// OpenMP threading needs libgomp).

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lgomp -lpthread -ldl
import "C"
