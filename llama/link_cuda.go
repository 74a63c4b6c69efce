//go:build linux && cuda

package llama

// CUDA backend (build with `make GOJEV_CUDA=1`, which builds llama.cpp with GGML_CUDA=ON and
// passes -tags cuda). Untested here: no CUDA machine is available to this project's CI. The
// libraries are the ones llama.cpp's CUDA build links (CUDA::cudart, CUDA::cublas,
// CUDA::cublasLt, CUDA::cuda_driver), looked for in CUDA's default install folder; if the CUDA
// toolkit lives elsewhere, add its lib folder with CGO_LDFLAGS=-L/path.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lgojev-chat -lllama-common -lllama-common-base -lcpp-httplib -lllama -lggml -lggml-cpu -lggml-cuda -lggml-base -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lcuda -lstdc++ -lm -lgomp -lpthread -ldl
import "C"
