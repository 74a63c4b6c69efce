//go:build linux && cuda

package llamarender

// As link_linux.go, with the CUDA backend (see llama/link_cuda.go). Untested here.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-cuda -lggml-base -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lcuda -lstdc++ -lm -lgomp -lpthread -ldl
import "C"
