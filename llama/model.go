package llama

/*
#include "gojev.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/gojev/gojev/gguf"
)

// ModelParams are the llama_model_params this package exposes.
type ModelParams struct {
	// NGPULayers is n_gpu_layers: how many layers to offload to a GPU backend; -1 means all.
	// It has no effect in a CPU-only build.
	NGPULayers int
	// UseMmap memory-maps the weights (load_mode LLAMA_LOAD_MODE_MMAP) instead of reading them
	// into memory (LLAMA_LOAD_MODE_NONE).
	UseMmap bool
	// VocabOnly loads only the vocabulary and metadata, no weights (vocab_only): enough to
	// tokenize, not to decode.
	VocabOnly bool
}

// DefaultModelParams returns {NGPULayers: -1, UseMmap: true}, llama_model_default_params'
// choices for these fields.
func DefaultModelParams() ModelParams { return ModelParams{NGPULayers: -1, UseMmap: true} }

// Model is a loaded llama_model. It is safe for concurrent use: tokenization and metadata
// reads are thread-safe in llama.cpp ("The API is thread-safe", llama.h), and Close waits for
// nothing but must not race with other calls — close a model only after every Context made
// from it is closed and no goroutine uses it.
type Model struct {
	mu     sync.RWMutex
	c      *C.struct_llama_model
	vocab  *Vocab
	path   string
	header *gguf.File
}

// OpenWith loads the model at path (LoadModel with n_gpu_layers and use_mmap set) and hands it
// to build; if build fails, the model is closed and the error returned. The owner of what build
// returns owns the model.
func OpenWith[T any](path string, nGPULayers int, noMmap bool, build func(*Model) (T, error)) (T, error) {
	var zero T
	mp := DefaultModelParams()
	mp.NGPULayers = nGPULayers
	mp.UseMmap = !noMmap
	model, err := LoadModel(path, mp)
	if err != nil {
		return zero, err
	}
	v, err := build(model)
	if err != nil {
		_ = model.Close()
		return zero, err
	}
	return v, nil
}

// LoadModel loads a GGUF model from path (llama_model_load_from_file).
//
// Before llama.cpp sees the file, its structure is validated in Go (gguf.Open): a missing file,
// a directory, a truncated or non-GGUF file, absurd counts or tensor data past the end return
// an error wrapping ErrLoad and the gguf package's sentinel, instead of reaching llama.cpp code
// that aborts the process on such input. The model must be closed with Close.
func LoadModel(path string, params ModelParams) (*Model, error) {
	initBackend()
	header, err := gguf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrLoad, path, err)
	}
	if !params.VocabOnly && len(header.Tensors) == 0 {
		return nil, fmt.Errorf("%w %s: the file has no tensors (a vocab-only file); load it with VocabOnly", ErrLoad, path)
	}
	cp := C.llama_model_default_params()
	cp.n_gpu_layers = C.int32_t(params.NGPULayers)
	if params.UseMmap {
		cp.load_mode = C.LLAMA_LOAD_MODE_MMAP
	} else {
		cp.load_mode = C.LLAMA_LOAD_MODE_NONE
	}
	cp.vocab_only = C.bool(params.VocabOnly)
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cm := C.llama_model_load_from_file(cpath, cp)
	if cm == nil {
		if _, statErr := os.Stat(path); statErr != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrLoad, path, statErr)
		}
		return nil, fmt.Errorf("%w %s: llama_model_load_from_file failed (its log, at slog level error, says why)", ErrLoad, path)
	}
	m := &Model{c: cm, path: path, header: header}
	m.vocab = newVocab(m, C.llama_model_get_vocab(cm))
	liveModels.Add(1)
	return m, nil
}

// Close frees the model (llama_model_free). It is idempotent. Contexts made from the model
// must be closed first.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.c != nil {
		C.llama_model_free(m.c)
		m.c = nil
		liveModels.Add(-1)
	}
	return nil
}

// Path returns the file the model was loaded from.
func (m *Model) Path() string { return m.path }

// GGUF returns the validated GGUF header the model was loaded from.
func (m *Model) GGUF() *gguf.File { return m.header }

// Vocab returns the model's vocabulary (llama_model_get_vocab). It belongs to the model and is
// valid until the model is closed.
func (m *Model) Vocab() *Vocab { return m.vocab }

// acquire locks the model for a read and returns its handle, or ErrClosed.
func (m *Model) acquire() (*C.struct_llama_model, error) {
	m.mu.RLock()
	if m.c == nil {
		m.mu.RUnlock()
		return nil, ErrClosed
	}
	return m.c, nil
}

func (m *Model) release() { m.mu.RUnlock() }

// ChatTemplate returns the model's chat template from its GGUF metadata
// (llama_model_chat_template; key tokenizer.chat_template, or tokenizer.chat_template.NAME
// when name is not empty). ok is false when the model has none.
func (m *Model) ChatTemplate(name string) (tmpl string, ok bool, err error) {
	cm, err := m.acquire()
	if err != nil {
		return "", false, err
	}
	defer m.release()
	var cname *C.char
	if name != "" {
		cname = C.CString(name)
		defer C.free(unsafe.Pointer(cname))
	}
	p := C.llama_model_chat_template(cm, cname)
	if p == nil {
		return "", false, nil
	}
	return C.GoString(p), true, nil
}

// Meta returns a GGUF metadata value as llama.cpp formats it (llama_model_meta_val_str). ok is
// false when the key is absent.
func (m *Model) Meta(key string) (value string, ok bool, err error) {
	cm, err := m.acquire()
	if err != nil {
		return "", false, err
	}
	defer m.release()
	ckey := C.CString(key)
	defer C.free(unsafe.Pointer(ckey))
	buf := make([]byte, 256)
	for {
		n := int(C.llama_model_meta_val_str(cm, ckey, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
		if n < 0 {
			return "", false, nil
		}
		if n < len(buf) {
			return string(buf[:n]), true, nil
		}
		buf = make([]byte, n+1)
	}
}

// NCtxTrain returns the context length the model was trained with (llama_model_n_ctx_train).
func (m *Model) NCtxTrain() (int, error) {
	cm, err := m.acquire()
	if err != nil {
		return 0, err
	}
	defer m.release()
	return int(C.llama_model_n_ctx_train(cm)), nil
}

// Desc returns llama.cpp's one-line description of the model (llama_model_desc), e.g.
// "gemma3 270M Q4_K - Medium".
func (m *Model) Desc() (string, error) {
	cm, err := m.acquire()
	if err != nil {
		return "", err
	}
	defer m.release()
	buf := make([]byte, 256)
	n := int(C.llama_model_desc(cm, (*C.char)(unsafe.Pointer(&buf[0])), C.size_t(len(buf))))
	if n < 0 {
		return "", errors.New("llama_model_desc failed")
	}
	return string(buf[:min(n, len(buf)-1)]), nil
}
