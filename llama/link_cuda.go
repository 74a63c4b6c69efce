//go:build linux && cuda

package llama

// CUDA backend (build with `make GOJEV_CUDA=1`, which builds llama.cpp with GGML_CUDA=ON and
// passes -tags cuda). Untested here: no CUDA machine is available to this project's CI. The
// libraries are the ones llama.cpp's CUDA build links (CUDA::cudart, CUDA::cublas,
// CUDA::cublasLt, CUDA::cuda_driver); CUDA_LIB_DIR defaults to /usr/local/cuda/lib64 through
// CGO_LDFLAGS if yours lives elsewhere.

// #cgo LDFLAGS: -L${SRCDIR}/../third_party/native/lib -lllama -lggml -lggml-cpu -lggml-cuda -lggml-base -L/usr/local/cuda/lib64 -lcudart -lcublas -lcublasLt -lcuda -lstdc++ -lm -lgomp -lpthread -ldl
import "C"
