package llama

/*
#include <dlfcn.h>
#include "gojev.h"
#include "ggml-backend.h"

extern void gojevLog(int level, char *text);

static void gojev_plugin_log(enum ggml_log_level level, const char *text, void *user_data) {
	(void)user_data;
	gojevLog((int)level, (char *)text);
}

// gojev_open_plugin_base loads the libggml-base.so that sits beside a plugin, before the plugin
// itself, and routes its log through gojev's: a plugin built with GGML_BACKEND_DL links its own
// libggml-base.so (found through its RUNPATH $ORIGIN), whose log callback is not the one
// llama_log_set installed in gojev's static copy. Returns the handle (kept loaded for the life
// of the process, as ggml keeps the plugin), or NULL when there is no such file.
static void *gojev_open_plugin_base(const char *path) {
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL) {
		return NULL;
	}
	void (*set)(ggml_log_callback, void *) = (void (*)(ggml_log_callback, void *))dlsym(h, "ggml_log_set");
	if (set != NULL) {
		set(gojev_plugin_log, NULL);
	}
	return h;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"unsafe"
)

// ErrBackendLoad is wrapped by every error of LoadBackend.
var ErrBackendLoad = errors.New("backend plugin not loaded")

// BackendLoadError says which plugin file failed to load and why: the dynamic loader's message
// (a missing libvulkan.so.1 or libcudart.so.13), or ggml's (no ggml_backend_init, another
// GGML_BACKEND_API_VERSION, "not supported on this system"). errors.Is(err, ErrBackendLoad).
type BackendLoadError struct {
	Path   string
	Reason string
}

func (e *BackendLoadError) Error() string {
	return fmt.Sprintf("llama: backend plugin %s not loaded: %s", e.Path, e.Reason)
}

func (e *BackendLoadError) Unwrap() error { return ErrBackendLoad }

var plugins struct {
	sync.Mutex
	loaded map[string]string // absolute path → backend name
}

// LoadBackend loads one ggml backend plugin, a libggml-<backend>.so built with GGML_BACKEND_DL
// (such as node-llama-cpp's prebuilt libggml-vulkan.so or libggml-cuda.so, with the
// libggml-base.so it was built with beside it), and registers its devices, which Devices then
// lists and LoadModel offloads to (ggml_backend_load, ggml-backend.h). It returns the backend's
// name ("Vulkan", "CUDA"). The plugin keeps its own libggml-base.so; its log is routed through
// SetLogger's logger like llama.cpp's.
//
// A plugin is loaded once per process and stays loaded: a second call with the same file
// returns the name again. A plugin that loads but finds no device (no driver, or Vulkan's
// CPU-type devices such as lavapipe, which ggml-vulkan lists only when GGML_VK_VISIBLE_DEVICES
// names them) registers a backend without devices. The error is a *BackendLoadError naming the
// file and ggml's or the dynamic loader's reason; nothing is registered then. Safe from several
// goroutines; call it before LoadModel, which places layers on the devices registered at load.
func LoadBackend(path string) (string, error) {
	initBackend()
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", &BackendLoadError{Path: path, Reason: err.Error()}
	}
	if fi, err := os.Stat(abs); err != nil {
		return "", &BackendLoadError{Path: path, Reason: err.Error()}
	} else if fi.IsDir() {
		return "", &BackendLoadError{Path: path, Reason: "a folder, not a plugin file (libggml-<backend>.so)"}
	}
	plugins.Lock()
	defer plugins.Unlock()
	if name, ok := plugins.loaded[abs]; ok {
		return name, nil
	}
	var reg C.ggml_backend_reg_t
	lines := captureLog(func() {
		base := filepath.Join(filepath.Dir(abs), pluginBase)
		if _, err := os.Stat(base); err == nil {
			cbase := C.CString(base)
			C.gojev_open_plugin_base(cbase)
			C.free(unsafe.Pointer(cbase))
		}
		cpath := C.CString(abs)
		reg = C.ggml_backend_load(cpath)
		C.free(unsafe.Pointer(cpath))
	})
	if reg == nil {
		reason := "ggml_backend_load returned no backend"
		if len(lines) > 0 {
			// ggml's last line says why; it starts with its function's name.
			reason = strings.TrimPrefix(lines[len(lines)-1], "load_backend: ")
		}
		return "", &BackendLoadError{Path: path, Reason: reason}
	}
	name := C.GoString(C.ggml_backend_reg_name(reg))
	if plugins.loaded == nil {
		plugins.loaded = map[string]string{}
	}
	plugins.loaded[abs] = name
	return name, nil
}

// pluginBase is the file name of ggml's base library as GGML_BACKEND_DL builds name it on this
// platform (libggml-base.so, libggml-base.dylib).
var pluginBase = "libggml-base" + map[bool]string{true: ".dylib", false: ".so"}[runtime.GOOS == "darwin"]

// LoadedBackends lists the plugins LoadBackend has loaded in this process: absolute path →
// backend name. Safe from several goroutines.
func LoadedBackends() map[string]string {
	plugins.Lock()
	defer plugins.Unlock()
	out := make(map[string]string, len(plugins.loaded))
	for k, v := range plugins.loaded {
		out[k] = v
	}
	return out
}
