//go:build linux && !cuda

package llamarender

// The shim and llama.cpp's common library come before the libraries package llama links; they
// are repeated here so that the order holds whatever order Go passes packages' flags in.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-base -lstdc++ -lm -lgomp -lpthread -ldl
import "C"
