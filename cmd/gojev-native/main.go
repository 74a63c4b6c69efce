package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gojev/gojev/internal/cache"
)

// modulePath is the module whose native libraries this command builds.
const modulePath = "github.com/gojev/gojev"

const usage = `gojev-native: build the native libraries of gojev (the pinned llama.cpp) and print the
environment that lets a plain "go build" link them.

Usage, in a Go module that requires github.com/gojev/gojev:

    eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"
    go build ./...

Subcommands:
    install   (default) build the libraries once into the cache (a few minutes the first
              time; a cached build is found in well under a second), then print on stdout:
                  export CGO_ENABLED=1
                  export CGO_CFLAGS="-O2 -g -I<entry>/include"
                  export CGO_LDFLAGS="-L<entry>/lib"
              Progress goes to stderr and to <cache>/gojev-native.log.
    env       print the same lines for a build that is already in the cache; fails when
              there is none (it fetches and builds nothing)
    help      this text

Flags:
    --gpu vulkan|cuda|metal
                  also fetch the prebuilt ggml backend plugin for that GPU (node-llama-cpp's
                  build of the same llama.cpp release, sha256-verified, into
                  <cache>/plugins/) and print  export GOJEV_PLUGINS=<plugin>:  jev loads it
                  from there; a program passes it in gojev.Options.Runtime.Plugins. No CUDA toolkit or Vulkan SDK is needed: cuda
                  needs the NVIDIA driver and the CUDA 13 runtime (libcudart.so.13,
                  libcublas.so.13: pip install nvidia-cuda-runtime nvidia-cublas), vulkan
                  needs libvulkan1 and a driver, metal needs macOS on Apple silicon.
    --cache DIR   the cache (default $GOJEV_CACHE, else ~/.cache/gojev). Entries are
                  native/<key>/{lib,include}, keyed by the pinned llama.cpp commit, the build
                  files, the backend, the compiler and the machine; the fetched source is in
                  src/<commit>. A gojev checkout's "make" on the same machine shares them.

Environment: GOJEV_CUDA=1 or GOJEV_METAL=1 build a GPU backend (then go build -tags cuda or
-tags metal); GOJEV_NATIVE_CPU=1 tunes for this CPU; JOBS sets the build parallelism.
Needs bash, git, cmake and a C/C++ compiler; npm for the first fetch of llama.cpp.
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gojev-native:", err)
		os.Exit(1)
	}
}

// config is what the command line asks for.
type config struct {
	sub   string // "install", "env" or "help"
	cache string // "" means the default
	gpu   string // "", "vulkan", "cuda" or "metal": also fetch that prebuilt backend plugin
}

func parseArgs(args []string) (config, error) {
	c := config{sub: "install"}
	subSet := false
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-h" || a == "-help" || a == "--help" || a == "help":
			c.sub = "help"
			return c, nil
		case a == "--cache" || a == "-cache":
			if i+1 >= len(args) {
				return c, fmt.Errorf("%s needs a folder", a)
			}
			i++
			c.cache = args[i]
		case strings.HasPrefix(a, "--cache=") || strings.HasPrefix(a, "-cache="):
			c.cache = a[strings.IndexByte(a, '=')+1:]
			if c.cache == "" {
				return c, errors.New("--cache needs a folder")
			}
		case a == "--gpu" || a == "-gpu" || strings.HasPrefix(a, "--gpu=") || strings.HasPrefix(a, "-gpu="):
			v, ok := strings.CutPrefix(strings.TrimPrefix(a, "-"), "-gpu=")
			if !ok {
				v, ok = strings.CutPrefix(strings.TrimPrefix(a, "-"), "gpu=")
			}
			if !ok {
				if i+1 >= len(args) {
					return c, fmt.Errorf("%s needs one of vulkan, cuda, metal", a)
				}
				i++
				v = args[i]
			}
			switch v {
			case "vulkan", "cuda", "metal":
				c.gpu = v
			default:
				return c, fmt.Errorf("--gpu %q: want vulkan, cuda or metal", v)
			}
		case (a == "install" || a == "env") && !subSet:
			c.sub, subSet = a, true
		default:
			return c, fmt.Errorf("unknown argument %q (see --help)", a)
		}
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseArgs(args)
	if err != nil {
		return err
	}
	if c.sub == "help" {
		_, err := io.WriteString(stdout, usage)
		return err
	}
	cache, err := cacheDir(c.cache)
	if err != nil {
		return err
	}
	dir, how, err := findModuleDir()
	if err != nil {
		return err
	}
	script := filepath.Join(dir, "third_party", "build-native.sh")
	if _, err := os.Stat(script); err != nil {
		return fmt.Errorf("the %s module folder %s (found by %s) has no third_party/build-native.sh: %v", modulePath, dir, how, err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return errors.New("bash is not on PATH; the native build runs a bash script")
	}
	start := time.Now()
	entry, err := buildNative(bash, script, dir, cache, c.sub == "env", stderr)
	if err != nil {
		return err
	}
	if err := checkEntry(entry); err != nil {
		return err
	}
	lines, err := exportLines(entry)
	if err != nil {
		return err
	}
	if c.gpu != "" {
		plugin, err := fetchPlugin(bash, filepath.Join(dir, "third_party", "fetch-plugin.sh"), cache, c.gpu, c.sub == "env", stderr)
		if err != nil {
			return err
		}
		lines += "export GOJEV_PLUGINS=" + shellQuote(plugin) + "\n"
		fmt.Fprintf(stderr, "gojev-native: %s plugin %s: jev loads it from GOJEV_PLUGINS; your program passes it in gojev.Options.Runtime.Plugins\n", c.gpu, plugin)
	}
	fmt.Fprintf(stderr, "gojev-native: native libraries in %s (%s, module %s)\n", entry, time.Since(start).Round(time.Millisecond), dir)
	if os.Getenv("GOJEV_CUDA") == "1" {
		fmt.Fprintln(stderr, "gojev-native: CUDA build: go build -tags cuda")
	}
	if os.Getenv("GOJEV_METAL") == "1" {
		fmt.Fprintln(stderr, "gojev-native: Metal build: go build -tags metal")
	}
	_, err = io.WriteString(stdout, lines)
	return err
}

// cacheDir is --cache, else $GOJEV_CACHE, else ~/.cache/gojev (the scripts' default), absolute.
func cacheDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	d, err := cache.Dir()
	if err != nil {
		return "", fmt.Errorf("%w (use --cache DIR)", err)
	}
	return d, nil
}

// buildNative runs build-native.sh (only looking, with onlyFind) and returns the entry path it
// prints last on stdout. The script's stderr goes to stderr and to <cache>/gojev-native.log.
func buildNative(bash, script, moddir, cache string, onlyFind bool, stderr io.Writer) (string, error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("cache: %v", err)
	}
	logPath := filepath.Join(cache, "gojev-native.log")
	logf, err := os.Create(logPath)
	if err != nil {
		return "", fmt.Errorf("cache: %v", err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "gojev-native %s: bash %s (GOJEV_CACHE=%s)\n", time.Now().Format(time.RFC3339), script, cache)

	env := append(os.Environ(), "GOJEV_CACHE="+cache, "GOJEV_NO_LINK=1")
	if os.Getenv("GOJEV_SRC_DIR") == "" {
		commit, err := pinnedCommit(filepath.Join(moddir, "third_party", "llama.cpp.pin"))
		if err != nil {
			return "", err
		}
		env = append(env, "GOJEV_SRC_DIR="+filepath.Join(cache, "src", commit))
	}
	if onlyFind {
		env = append(env, "GOJEV_NO_BUILD=1")
	}
	var out bytes.Buffer
	cmd := exec.Command(bash, script)
	cmd.Dir = cache // not the module folder: it may be read-only
	cmd.Env = env
	cmd.Stdout = &out
	cmd.Stderr = io.MultiWriter(stderr, logf)
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case onlyFind && errors.As(err, &exit) && exit.ExitCode() == 3:
		return "", fmt.Errorf("no native build in %s for this gojev version and backend; run install", cache)
	case err != nil:
		return "", fmt.Errorf("building the native libraries failed (%v); the log is %s", err, logPath)
	}
	entry := lastLine(out.String())
	if entry == "" {
		return "", fmt.Errorf("build-native.sh printed no cache entry; the log is %s", logPath)
	}
	return entry, nil
}

// fetchPlugin runs fetch-plugin.sh for gpu (only looking, with onlyFind) and returns the
// plugin's path, the last line it prints.
func fetchPlugin(bash, script, cache, gpu string, onlyFind bool, stderr io.Writer) (string, error) {
	env := append(os.Environ(), "GOJEV_CACHE="+cache)
	if onlyFind {
		env = append(env, "GOJEV_NO_FETCH=1")
	}
	var out bytes.Buffer
	cmd := exec.Command(bash, script, gpu)
	cmd.Dir = cache
	cmd.Env = env
	cmd.Stdout = &out
	cmd.Stderr = stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case onlyFind && errors.As(err, &exit) && exit.ExitCode() == 3:
		return "", fmt.Errorf("no %s plugin in %s; run install --gpu %s", gpu, cache, gpu)
	case err != nil:
		return "", fmt.Errorf("fetching the %s plugin failed (%v)", gpu, err)
	}
	p := lastLine(out.String())
	if p == "" {
		return "", fmt.Errorf("fetch-plugin.sh printed no plugin path")
	}
	return p, nil
}

// pinnedCommit reads LLAMA_CPP_COMMIT from third_party/llama.cpp.pin.
func pinnedCommit(pin string) (string, error) {
	b, err := os.ReadFile(pin)
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "LLAMA_CPP_COMMIT="); ok && v != "" {
			return v, nil
		}
	}
	return "", fmt.Errorf("%s has no LLAMA_CPP_COMMIT line", pin)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// checkEntry makes sure the entry holds what package llama links and includes.
func checkEntry(entry string) error {
	for _, f := range []string{".complete", "lib/libllama.a", "lib/libggml.a", "include/llama.h"} {
		if _, err := os.Stat(filepath.Join(entry, f)); err != nil {
			return fmt.Errorf("the native build %s is incomplete (%v); remove it and run install again", entry, err)
		}
	}
	return nil
}

// exportLines returns the shell lines that point cgo at entry's include/ and lib/ folders.
// The -l flags are in package llama's #cgo directives; its -I/-L to ${SRCDIR}/../third_party/native
// name a folder that does not exist in the module cache, which the compiler and linker ignore.
func exportLines(entry string) (string, error) {
	inc, err := goQuote("-I" + filepath.Join(entry, "include"))
	if err != nil {
		return "", err
	}
	lib, err := goQuote("-L" + filepath.Join(entry, "lib"))
	if err != nil {
		return "", err
	}
	return "export CGO_ENABLED=1\n" +
		"export CGO_CFLAGS=" + shellQuote("-O2 -g "+inc) + "\n" +
		"export CGO_LDFLAGS=" + shellQuote(lib) + "\n", nil
}

// goQuote quotes one argument the way the go command splits CGO_CFLAGS and CGO_LDFLAGS
// (cmd/internal/quoted): fields are separated by spaces and may be wrapped in single or double
// quotes, with no escapes inside.
func goQuote(arg string) (string, error) {
	if !utf8.ValidString(arg) || strings.ContainsAny(arg, "\x00") {
		return "", fmt.Errorf("path %q cannot be passed to cgo", arg)
	}
	if arg != "" && !strings.ContainsAny(arg, " \t\n\r'\"") {
		return arg, nil
	}
	switch {
	case !strings.Contains(arg, "'"):
		return "'" + arg + "'", nil
	case !strings.Contains(arg, `"`):
		return `"` + arg + `"`, nil
	}
	return "", fmt.Errorf("path %q has both quote characters; the go command cannot take it in CGO_CFLAGS (use --cache with a plainer folder)", arg)
}

// shellQuote quotes s for a POSIX shell: double quotes when nothing in s is special inside them,
// else single quotes.
func shellQuote(s string) string {
	if !strings.ContainsAny(s, "$`\\\"!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// findModuleDir returns the gojev module's source folder and how it was found: `go list -m` in
// the current folder (a module that requires gojev, or gojev itself), else the build info of
// this binary with GOMODCACHE (go run pkg@version outside a module), else this source file's
// folder.
func findModuleDir() (dir, how string, err error) {
	var errs []string
	goBin := goCommand()
	out, err := exec.Command(goBin, "list", "-m", "-json", modulePath).Output()
	if err == nil {
		if d, err := parseGoListModule(out); err == nil {
			return d, "go list -m", nil
		} else {
			errs = append(errs, err.Error())
		}
	} else {
		errs = append(errs, "go list -m "+modulePath+": "+commandError(err))
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		modcache := os.Getenv("GOMODCACHE")
		if modcache == "" {
			if o, err := exec.Command(goBin, "env", "GOMODCACHE").Output(); err == nil {
				modcache = strings.TrimSpace(string(o))
			}
		}
		d, err := moduleDirFromBuildInfo(bi, modcache)
		if err == nil && exists(filepath.Join(d, "go.mod")) {
			return d, "build info", nil
		}
		if err == nil {
			err = fmt.Errorf("%s is not there", d)
		}
		errs = append(errs, "build info: "+err.Error())
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		d := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
		if exists(filepath.Join(d, "third_party", "build-native.sh")) {
			return d, "source path", nil
		}
	}
	return "", "", fmt.Errorf("cannot find the %s module folder (run this in a module that requires it): %s", modulePath, strings.Join(errs, "; "))
}

func goCommand() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func commandError(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) && len(exit.Stderr) > 0 {
		return strings.TrimSpace(string(exit.Stderr))
	}
	return err.Error()
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// listedModule is the part of `go list -m -json` output used here.
type listedModule struct {
	Path    string
	Version string
	Dir     string
	Main    bool
	Replace *listedModule
	Error   *struct{ Err string }
}

// parseGoListModule reads `go list -m -json` output for the gojev module and returns its folder
// (the replacement's folder when it is replaced).
func parseGoListModule(out []byte) (string, error) {
	var m listedModule
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("go list -m -json: %v", err)
	}
	if m.Error != nil {
		return "", fmt.Errorf("go list -m: %s", m.Error.Err)
	}
	if m.Path != modulePath {
		return "", fmt.Errorf("go list -m printed module %q, want %s", m.Path, modulePath)
	}
	dir := m.Dir
	if dir == "" && m.Replace != nil {
		dir = m.Replace.Dir
	}
	if dir == "" {
		return "", fmt.Errorf("go list -m: %s@%s is not downloaded (run go mod download %s)", modulePath, m.Version, modulePath)
	}
	return dir, nil
}

// moduleDirFromBuildInfo returns gojev's folder in the module cache from this binary's build
// info: the main module (go run github.com/gojev/gojev/cmd/gojev-native@version) or a dependency.
func moduleDirFromBuildInfo(bi *debug.BuildInfo, modcache string) (string, error) {
	var m *debug.Module
	if bi.Main.Path == modulePath {
		m = &bi.Main
	}
	for _, d := range bi.Deps {
		if d.Path == modulePath {
			m = d
		}
	}
	if m == nil {
		return "", fmt.Errorf("%s is not in this binary's build info", modulePath)
	}
	if m.Replace != nil {
		if m.Replace.Version == "" {
			if filepath.IsAbs(m.Replace.Path) {
				return m.Replace.Path, nil
			}
			return "", fmt.Errorf("replaced by the relative folder %s", m.Replace.Path)
		}
		m = m.Replace
	}
	if m.Version == "" || m.Version == "(devel)" {
		return "", fmt.Errorf("%s has no version in the build info (a checkout: run this inside it)", m.Path)
	}
	if modcache == "" {
		return "", errors.New("GOMODCACHE is unknown")
	}
	p, err := escapeModulePath(m.Path)
	if err != nil {
		return "", err
	}
	v, err := escapeModulePath(m.Version)
	if err != nil {
		return "", err
	}
	return filepath.Join(modcache, filepath.FromSlash(p)+"@"+v), nil
}

// escapeModulePath applies the module cache's case encoding (golang.org/x/mod/module.EscapePath):
// an upper-case letter becomes '!' and its lower-case form.
func escapeModulePath(s string) (string, error) {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '!' || r >= utf8.RuneSelf:
			return "", fmt.Errorf("cannot escape %q for the module cache", s)
		case 'A' <= r && r <= 'Z':
			b.WriteByte('!')
			b.WriteRune(r + ('a' - 'A'))
		default:
			b.WriteRune(r)
		}
	}
	return b.String(), nil
}
