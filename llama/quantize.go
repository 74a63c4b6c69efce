package llama

/*
#include "gojev.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/gojev/gojev/gguf"
)

// ErrQuantize: llama_model_quantize failed (its log says why) or was asked for an unknown type.
var ErrQuantize = errors.New("llama: quantize")

// QuantTypes are the llama_ftype names Quantize takes, as llama-quantize spells them.
var QuantTypes = []string{"f16", "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0"}

var quantFtypes = map[string]C.enum_llama_ftype{
	"f16": C.LLAMA_FTYPE_MOSTLY_F16, "q8_0": C.LLAMA_FTYPE_MOSTLY_Q8_0, "q6_k": C.LLAMA_FTYPE_MOSTLY_Q6_K,
	"q5_k_m": C.LLAMA_FTYPE_MOSTLY_Q5_K_M, "q4_k_m": C.LLAMA_FTYPE_MOSTLY_Q4_K_M, "q4_0": C.LLAMA_FTYPE_MOSTLY_Q4_0,
}

// Quantize writes the GGUF model in to out with its weights quantized to typ (one of
// QuantTypes, case-insensitive), as llama.cpp's llama-quantize does (llama_model_quantize with
// its default parameters), on threads threads (≤ 0: every core). The input is validated in Go
// first (gguf.Open), as LoadModel does. Errors wrap ErrQuantize, or ErrLoad for a bad input.
func Quantize(in, out, typ string, threads int) error {
	ftype, ok := quantFtypes[strings.ToLower(typ)]
	if !ok {
		return fmt.Errorf("%w: unknown type %q (want one of %s)", ErrQuantize, typ, strings.Join(QuantTypes, ", "))
	}
	initBackend()
	header, err := gguf.Open(in)
	if err != nil {
		return fmt.Errorf("%w %s: %w", ErrLoad, in, err)
	}
	if len(header.Tensors) == 0 {
		return fmt.Errorf("%w %s: the file has no tensors", ErrLoad, in)
	}
	p := C.llama_model_quantize_default_params()
	p.ftype = ftype
	p.nthread = C.int32_t(threads)
	cin, cout := C.CString(in), C.CString(out)
	defer C.free(unsafe.Pointer(cin))
	defer C.free(unsafe.Pointer(cout))
	if rc := C.llama_model_quantize(cin, cout, &p); rc != 0 {
		return fmt.Errorf("%w: %s to %s as %s failed (llama_model_quantize returned %d; its log, at slog level error, says why)", ErrQuantize, in, out, typ, rc)
	}
	return nil
}
