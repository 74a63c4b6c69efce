package llama

/*
#include <stdlib.h>
#if !__has_include("gojev_chat.h")
#error gojev: the llama.cpp native libraries are not found. In a clone of gojev, run make. From your own Go module, run  eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"  before go build (see the README).
#endif
#include "gojev_chat.h"
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/gojev/gojev/render"
)

// ErrTemplate wraps every failure of llama.cpp's template code to parse or apply a template
// (the C++ exception's message follows). It also matches render.ErrTemplate, so callers that
// handle either renderer test one sentinel. Render after Close returns ErrClosed.
var ErrTemplate = fmt.Errorf("llama: chat template: %w", render.ErrTemplate)

// Template is a chat template parsed by llama.cpp (common_chat_templates_init). It is safe for
// concurrent use: renders are serialised on a mutex (llama.cpp does not document its
// templates as thread-safe). Close frees the C object, as llama's handles do.
type Template struct {
	mu     sync.Mutex
	c      *C.gojev_chat
	source string
	model  *Model
}

// NewTemplate parses a template for model, as llama-server does at start-up: BOS/EOS texts and the
// vocab's add_bos/add_eos come from the model. source "" uses the model's tokenizer.chat_template
// (llama.cpp itself would fall back to ChatML on a model without one; gojev's callers refuse
// such a model first). The model must outlive the Template. Errors wrap ErrTemplate.
func NewTemplate(model *Model, source string) (*Template, error) {
	if model == nil {
		return nil, fmt.Errorf("%w: nil model", ErrTemplate)
	}
	return newTemplate(model, source, "", "")
}

// ParseTemplate parses a template without a model, with the given bos_token and eos_token texts (as
// llama.cpp's tests and `--chat-template` do). Errors wrap ErrTemplate.
func ParseTemplate(source, bosToken, eosToken string) (*Template, error) {
	if source == "" {
		return nil, fmt.Errorf("%w: empty template source", ErrTemplate)
	}
	return newTemplate(nil, source, bosToken, eosToken)
}

func newTemplate(model *Model, source, bos, eos string) (*Template, error) {
	csrc, cbos, ceos := C.CString(source), C.CString(bos), C.CString(eos)
	defer C.free(unsafe.Pointer(csrc))
	defer C.free(unsafe.Pointer(cbos))
	defer C.free(unsafe.Pointer(ceos))
	var cm *C.struct_llama_model
	if model != nil {
		var err error
		if cm, err = model.acquire(); err != nil {
			return nil, err
		}
		defer model.release()
	}
	var cerr *C.char
	c := C.gojev_chat_init(cm, csrc, cbos, ceos, &cerr)
	if c == nil {
		return nil, fmt.Errorf("%w: %s", ErrTemplate, takeString(cerr))
	}
	liveTemplates.Add(1)
	return &Template{c: c, source: C.GoString(C.gojev_chat_source(c)), model: model}, nil
}

// Source returns the template source llama.cpp uses (after its own compatibility patches).
func (t *Template) Source() string { return t.source }

// Render renders messages as llama-server's /apply-template does for a request
// {"messages": [...], "chat_template_kwargs": opts.Kwargs}: add_generation_prompt from opts,
// each kwarg passed to the template as its JSON text, an "enable_thinking" kwarg overriding the
// thinking default, and opts.Now as the clock (the zero value means time.Now(), which is what
// the server always uses). BOSToken/EOSToken/SpecialTokens in opts are ignored: they come from
// the model. Errors wrap ErrTemplate (a template that raises, an invalid kwarg) or ErrClosed.
func (t *Template) Render(messages []render.Message, opts render.Options) (string, error) {
	// C strings for every message and kwarg, freed on return; C keeps none of them.
	var cstrs []*C.char
	defer func() {
		for _, p := range cstrs {
			C.free(unsafe.Pointer(p))
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		cstrs = append(cstrs, p)
		return p
	}
	n := len(messages)
	// Pointer arrays live in C memory: a Go slice of C pointers passed to C is fine, but
	// allocating them in C keeps the rule "no Go memory in C" trivially true.
	roles := cArray(max(n, 1))
	defer C.free(unsafe.Pointer(&roles[0]))
	contents := cArray(max(n, 1))
	defer C.free(unsafe.Pointer(&contents[0]))
	for i, m := range messages {
		roles[i], contents[i] = cstr(m.Role), cstr(m.Content)
	}
	keys := slices.Sorted(mapKeys(opts.Kwargs))
	ckeys := cArray(max(len(keys), 1))
	defer C.free(unsafe.Pointer(&ckeys[0]))
	cvals := cArray(max(len(keys), 1))
	defer C.free(unsafe.Pointer(&cvals[0]))
	for i, k := range keys {
		v, err := jsonText(opts.Kwargs[k])
		if err != nil {
			return "", fmt.Errorf("%w: chat_template_kwargs[%q]: %w", ErrTemplate, k, err)
		}
		ckeys[i], cvals[i] = cstr(k), cstr(v)
	}
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	agp := C.int(0)
	if opts.AddGenerationPrompt {
		agp = 1
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c == nil {
		return "", ErrClosed
	}
	var out, cerr *C.char
	rc := C.gojev_chat_apply(t.c, C.size_t(n), &roles[0], &contents[0], C.size_t(len(keys)), &ckeys[0], &cvals[0],
		agp, C.int64_t(now.UnixMilli()), &out, &cerr)
	runtime.KeepAlive(t)
	if rc != 0 {
		return "", fmt.Errorf("%w: %s", ErrTemplate, takeString(cerr))
	}
	return takeString(out), nil
}

// Close frees the C template. It is idempotent; Render after Close returns ErrClosed.
func (t *Template) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.c != nil {
		C.gojev_chat_free(t.c)
		t.c = nil
		liveTemplates.Add(-1)
	}
	return nil
}

// LiveTemplates reports how many Templates are open (created and not yet closed); tests check
// it is back to zero after Close.
func LiveTemplates() int64 { return liveTemplates.Load() }

// cArray allocates n C pointers in C memory, zeroed.
func cArray(n int) []*C.char {
	p := C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.char)(nil))))
	return unsafe.Slice((**C.char)(p), n)
}

// takeString copies and frees a string the shim allocated.
func takeString(p *C.char) string {
	if p == nil {
		return "unknown error"
	}
	defer C.gojev_chat_string_free(p)
	return C.GoString(p)
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// jsonText writes a kwarg as JSON text the way the server receives it (nlohmann's dump():
// compact, no HTML escaping).
func jsonText(v any) (string, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}
