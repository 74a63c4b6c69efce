//go:build darwin

package llama

// macOS: the CPU backend uses Accelerate (GGML_BLAS, on by default on Apple); with -tags metal
// (`make GOJEV_METAL=1`) the Metal backend with its shaders embedded (GGML_METAL_EMBED_LIBRARY).
// Untested here: no macOS machine is available to this project's CI.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-blas -lggml-base -lc++ -framework Accelerate -framework Foundation
// #cgo metal LDFLAGS: -lggml-metal -framework Metal -framework MetalKit
import "C"
