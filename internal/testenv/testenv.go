// Package testenv finds the material tests need (the shared data folder, the llama.cpp source
// tree, python3) and decides whether its absence skips a test or fails it.
//
// Outside CI a test whose material is missing skips, saying why. Under CI (the CI environment
// variable is set, as .ci/run does) the same absence fails the test: CI fetches and builds
// everything, so a missing piece there is a bug, never a pass.
package testenv

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/cache"
	"github.com/gojev/gojev/internal/llamaserver"
)

// InCI reports whether the tests run under CI (the CI environment variable is non-empty).
func InCI() bool { return os.Getenv("CI") != "" }

// Missing skips the test outside CI and fails it under CI, with the reason.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("required under CI: "+format, args...)
	}
	tb.Skipf("skipped outside CI: "+format, args...)
}

// RepoRoot returns the repository root (the folder holding go.mod).
func RepoRoot(tb testing.TB) string {
	tb.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		tb.Fatal("testenv: cannot locate the source file")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedData returns the path of a file under ../shared/data (beside the repository), or
// skips/fails through Missing when it is absent. GOJEV_SHARED_DATA overrides the folder.
func SharedData(tb testing.TB, rel string) string {
	tb.Helper()
	dir := os.Getenv("GOJEV_SHARED_DATA")
	if dir == "" {
		dir = filepath.Join(RepoRoot(tb), "..", "shared", "data")
	}
	p := filepath.Join(dir, rel)
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "needs %s from the shared data folder (a user's machine has none): %v", rel, err)
	}
	return p
}

// LlamaCppDir returns the llama.cpp source tree (LLAMA_CPP_DIR, else third_party/llama.cpp),
// or skips/fails through Missing when it has not been fetched.
func LlamaCppDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv("LLAMA_CPP_DIR")
	if dir == "" {
		dir = filepath.Join(RepoRoot(tb), "third_party", "llama.cpp")
	}
	if _, err := os.Stat(filepath.Join(dir, "include", "llama.h")); err != nil {
		Missing(tb, "needs the llama.cpp source tree (run `make native`): %v", err)
	}
	return dir
}

// Python3 returns the path of python3, or skips/fails through Missing when it is absent.
func Python3(tb testing.TB) string {
	tb.Helper()
	p, err := exec.LookPath("python3")
	if err != nil {
		Missing(tb, "needs python3 on PATH: %v", err)
	}
	return p
}

// SmallModel returns the small, fast model most tests run on: $JEV_SMALL_MODEL, else
// cache.SmallModelFile in the model cache, or skips/fails through Missing when neither exists.
func SmallModel(tb testing.TB) string {
	tb.Helper()
	return cachedModel(tb, "JEV_SMALL_MODEL", cache.SmallModelFile, "scripts/fetch-model.sh small")
}

// DefaultModel returns the default model (the one `make model` fetches, which make demo and
// make eval use), for the tests of decision quality: $GOJEV_MODEL, else cache.DefaultModelFile
// in the model cache, or skips/fails through Missing when neither exists.
func DefaultModel(tb testing.TB) string {
	tb.Helper()
	return cachedModel(tb, "GOJEV_MODEL", cache.DefaultModelFile, "make model")
}

// SmallModelPath returns the small model's path ($JEV_SMALL_MODEL, else cache.SmallModelFile in the
// model cache) when the file exists, for code without a testing.TB (TestMain, examples).
func SmallModelPath() (string, error) {
	p := os.Getenv("JEV_SMALL_MODEL")
	if p == "" {
		var err error
		if p, err = cache.Model(cache.SmallModelFile); err != nil {
			return "", err
		}
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no small model (set JEV_SMALL_MODEL or run scripts/fetch-model.sh small): %w", err)
	}
	return p, nil
}

// ExampleModel is for a TestMain whose package's runnable examples decide on the small model:
// examples cannot skip themselves, so without the model it fails the run under CI (exit 1) and
// outside CI skips every Example, saying why on stderr, and returns "".
func ExampleModel() string {
	p, err := SmallModelPath()
	switch {
	case err == nil:
		return p
	case InCI():
		fmt.Fprintln(os.Stderr, "required under CI: the examples need the small model:", err)
		os.Exit(1)
	default:
		fmt.Fprintln(os.Stderr, "skipping the examples outside CI:", err)
		_ = flag.Set("test.skip", "^Example")
	}
	return ""
}

func cachedModel(tb testing.TB, env, file, fetch string) string {
	tb.Helper()
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			Missing(tb, "%s=%s: %v", env, p, err)
		}
		return p
	}
	p, err := cache.Model(file)
	if err != nil {
		Missing(tb, "no cache folder for the model: %v", err)
	}
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "needs the model %s (run `%s` or set %s): %v", file, fetch, env, err)
	}
	return p
}

// RowLine is a JSONL row of the contract with n options o0..o(n-1) ("Option i."), state
// {"message": "hello"} and question "Which?", for tests of the row files.
func RowLine(id string, n int) string {
	var opts []string
	for i := range n {
		opts = append(opts, fmt.Sprintf(`{"id": "o%d", "description": "Option %d."}`, i, i))
	}
	return fmt.Sprintf(`{"id": %q, "state": {"message": "hello"}, "question": "Which?", "options": [%s]}`, id, strings.Join(opts, ", "))
}

// SDKPython returns the python of the venv that holds TypeSafe's official System One client
// ($JEV_SDK_PYTHON, as make test sets it from scripts/sdk-venv.sh), or skips/fails through
// Missing.
func SDKPython(tb testing.TB) string {
	tb.Helper()
	p := os.Getenv("JEV_SDK_PYTHON")
	if p == "" {
		Missing(tb, "needs the typesafe-sdk venv: JEV_SDK_PYTHON=\"$(scripts/sdk-venv.sh)\" (make test sets it)")
	}
	if _, err := os.Stat(p); err != nil {
		Missing(tb, "JEV_SDK_PYTHON=%s: %v", p, err)
	}
	return p
}

// LlamaServer starts the llama-server that `make server` built from the pinned llama.cpp on
// 127.0.0.1 with model (2 threads, flash attention off) and stops it when the test ends, also
// when it fails. Without the binary it skips/fails through Missing.
func LlamaServer(tb testing.TB, model string) *llamaserver.Server {
	tb.Helper()
	bin, err := llamaserver.Find(RepoRoot(tb))
	if err != nil {
		Missing(tb, "needs llama-server (run `make server`): %v", err)
	}
	s, err := llamaserver.Start(context.Background(), llamaserver.Options{Bin: bin, Model: model, Threads: 2, Passive: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// Rows reads up to limit rows (limit ≤ 0: all) from a JSONL file of rows, failing the test on
// a bad line.
func Rows(tb testing.TB, path string, limit int) []contract.Row {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var rows []contract.Row
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() && (limit <= 0 || len(rows) < limit) {
		row, err := contract.ParseRow(sc.Bytes())
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return rows
}

// VulkanPlugin returns the prebuilt Vulkan backend plugin (third_party/fetch-plugin.sh vulkan
// puts it in the cache; .ci/run runs it) after checking that a Vulkan driver is installed, or
// skips/fails through Missing. It does not load the plugin.
func VulkanPlugin(tb testing.TB) string {
	tb.Helper()
	if icds, _ := filepath.Glob("/usr/share/vulkan/icd.d/*.json"); len(icds) == 0 {
		Missing(tb, "needs a Vulkan driver (Debian/Ubuntu: apt-get install libvulkan1 mesa-vulkan-drivers, whose lavapipe is a software Vulkan device)")
	}
	cmd := exec.Command("bash", filepath.Join(RepoRoot(tb), "third_party", "fetch-plugin.sh"), "vulkan")
	cmd.Env = append(os.Environ(), "GOJEV_NO_FETCH=1")
	out, err := cmd.Output()
	if err != nil {
		Missing(tb, "needs the prebuilt Vulkan plugin (run `bash third_party/fetch-plugin.sh vulkan`): %v", err)
	}
	return strings.TrimSpace(string(out))
}

// SyntheticModel writes a model of the given scripts/synthetic-model.py shape ("tiny") with
// random weights and the real Qwen2 vocabulary and chat template into a temporary folder, and
// returns its path; without python3, numpy or the llama.cpp tree it skips/fails through
// Missing.
func SyntheticModel(tb testing.TB, shape string) string {
	tb.Helper()
	python := Python3(tb)
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		Missing(tb, "needs numpy for scripts/synthetic-model.py (python3 -m pip install numpy): %v", err)
	}
	tree := LlamaCppDir(tb)
	out := filepath.Join(tb.TempDir(), "synthetic-"+shape+".gguf")
	cmd := exec.Command(python, filepath.Join(RepoRoot(tb), "scripts", "synthetic-model.py"), "--shape", shape, "-o", out, "--llama-cpp", tree)
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("synthetic-model.py: %v\n%s", err, b)
	}
	return out
}
