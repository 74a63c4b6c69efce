package llama

/*
#include "gojev.h"

extern void gojevLog(int level, char *text);

static void gojev_log_trampoline(enum ggml_log_level level, const char *text, void *user_data) {
	(void)user_data;
	gojevLog((int)level, (char *)text);
}

static void gojev_install_log(void) {
	llama_log_set(gojev_log_trampoline, NULL);
}
*/
import "C"

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
)

var logger atomic.Pointer[slog.Logger]

// SetLogger sends llama.cpp's and ggml's log lines to l (nil restores slog.Default()). Levels map
// as: GGML_LOG_LEVEL_ERROR → slog.LevelError, WARN → LevelWarn, INFO → LevelDebug (llama.cpp
// prints dozens of INFO lines per model load), DEBUG → LevelDebug-4; the one WARN llama.cpp
// prints for a token type it corrects itself ("control-looking token", at every load of
// Qwen2.5's GGUFs) → LevelDebug, so a load is silent at slog's default level. Each record
// carries the attribute source=llama.cpp. Lines llama.cpp prints in fragments (GGML_LOG_LEVEL_CONT) are
// joined before they are logged.
func SetLogger(l *slog.Logger) { logger.Store(l) }

func currentLogger() *slog.Logger {
	if l := logger.Load(); l != nil {
		return l
	}
	return slog.Default()
}

// logLine accumulates fragments until a newline arrives; llama.cpp logs from several threads,
// so the buffer is guarded.
var logLine struct {
	sync.Mutex
	buf   strings.Builder
	level slog.Level
}

// aborting counts decodes being aborted on purpose (their context was cancelled). llama.cpp
// logs an abort as graph_compute errors; while one is expected they go to the debug level.
var aborting atomic.Int32

//export gojevLog
func gojevLog(level C.int, text *C.char) {
	s := C.GoString(text)
	logLine.Lock()
	defer logLine.Unlock()
	if level != C.GGML_LOG_LEVEL_CONT {
		if logLine.buf.Len() > 0 { // a new record while a fragment is pending: flush it
			emitLog(logLine.level, logLine.buf.String())
			logLine.buf.Reset()
		}
		logLine.level = slogLevel(level)
		if aborting.Load() > 0 && logLine.level > slog.LevelDebug {
			logLine.level = slog.LevelDebug
		}
	}
	logLine.buf.WriteString(s)
	if strings.HasSuffix(s, "\n") {
		emitLog(logLine.level, logLine.buf.String())
		logLine.buf.Reset()
	}
}

// capture collects the log lines emitted while captureLog runs its function, beside logging
// them as usual (LoadBackend reads ggml's reason for a failed plugin from them).
var capture struct {
	sync.Mutex
	on    bool
	lines []string
}

// captureLog runs f and returns the lines llama.cpp logged meanwhile, of every level.
// Concurrent captures see each other's lines; callers serialise themselves.
func captureLog(f func()) []string {
	capture.Lock()
	capture.on, capture.lines = true, nil
	capture.Unlock()
	f()
	capture.Lock()
	defer capture.Unlock()
	capture.on = false
	return capture.lines
}

func emitLog(level slog.Level, msg string) {
	msg = strings.TrimRight(msg, "\n")
	if strings.TrimSpace(msg) == "" {
		return
	}
	capture.Lock()
	if capture.on {
		capture.lines = append(capture.lines, msg)
	}
	capture.Unlock()
	if level == slog.LevelWarn && strings.Contains(msg, "control-looking token") {
		// llama.cpp notes, at every load of some GGUFs (Qwen2.5's among them), a token whose
		// type it corrects itself; nothing for a user to do, so it is not worth a line at every
		// start of a program that embeds gojev.
		level = slog.LevelDebug
	}
	l := currentLogger()
	ctx := context.Background()
	if l.Enabled(ctx, level) {
		l.Log(ctx, level, msg, slog.String("source", "llama.cpp"))
	}
}

func slogLevel(level C.int) slog.Level {
	switch level {
	case C.GGML_LOG_LEVEL_ERROR:
		return slog.LevelError
	case C.GGML_LOG_LEVEL_WARN:
		return slog.LevelWarn
	case C.GGML_LOG_LEVEL_INFO:
		return slog.LevelDebug
	default:
		return slog.LevelDebug - 4
	}
}

var backendOnce sync.Once

// initBackend routes the native log through slog and initialises llama.cpp's backends once per
// process (llama_log_set, llama_backend_init). Every constructor in this package calls it.
func initBackend() {
	backendOnce.Do(func() {
		C.gojev_install_log()
		C.llama_backend_init()
	})
}
