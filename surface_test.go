package gojev_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
)

// TestImportCOnlyInLlama: package llama is the one cgo package.
func TestImportCOnlyInLlama(t *testing.T) {
	root := testenv.RepoRoot(t)
	var cgo []string
	for _, rel := range goSources(t, root) {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, rel), nil, parser.ImportsOnly)
		require.NoError(t, err)
		for _, imp := range f.Imports {
			if imp.Path.Value == `"C"` {
				cgo = append(cgo, filepath.ToSlash(filepath.Dir(rel)))
			}
		}
	}
	require.NotEmpty(t, cgo)
	for _, dir := range cgo {
		assert.Equal(t, "llama", dir, "import \"C\" outside llama/")
	}
}

// TestPublicSurface: the cross-checks and measurements are internal, and what a library user
// imports does not pull in the CLI's chart and progress-bar modules.
func TestPublicSurface(t *testing.T) {
	root := testenv.RepoRoot(t)
	out := goCmd(t, root, nil, "list", "./...")
	var public []string
	for _, p := range strings.Fields(out) {
		if !strings.Contains(p, "/internal/") && !strings.HasSuffix(p, "/internal") {
			public = append(public, strings.TrimPrefix(p, "github.com/gojev/gojev"))
		}
	}
	assert.ElementsMatch(t, []string{"", "/backend", "/calibrate", "/cmd/gojev-native", "/cmd/jev", "/contract", "/debias", "/gguf", "/knockout", "/llama", "/pyjson", "/render", "/batch", "/backend/backendtest", "/systemone"}, public)
	deps := goCmd(t, root, nil, "list", "-deps", ".", "./batch")
	for _, cliOnly := range []string{"gonum.org/v1/plot", "github.com/schollz/progressbar", "golang.org/x/term"} {
		assert.NotContains(t, deps, cliOnly, "the root package's and batch's dependencies")
	}
}

// importRules is docs/design.md's map of what each package may import of this module ("" is
// the root package): dependencies point one way, from cmd down to the leaves. A package not
// listed is an application (cmd/..., internal/app/...), which may import anything but cmd.
var importRules = map[string][]string{
	"":                     {"backend", "calibrate", "contract", "debias", "knockout", "llama", "pyjson", "internal/digest"},
	"backend":              {"contract", "llama", "pyjson", "render"},
	"backend/backendtest":  {"backend", "contract", "debias"},
	"batch":                {"", "backend", "calibrate", "contract", "debias", "knockout", "pyjson", "systemone", "internal/atomicfile", "internal/jsonl", "internal/version"},
	"calibrate":            {"debias", "internal/atomicfile"},
	"contract":             {"pyjson"},
	"debias":               {"internal/atomicfile", "internal/cache"},
	"gguf":                 {},
	"knockout":             {"debias"},
	"llama":                {"gguf", "render"},
	"pyjson":               {},
	"render":               {},
	"systemone":            {"", "backend", "contract", "debias", "pyjson"},
	"internal/atomicfile":  {},
	"internal/cache":       {},
	"internal/cli":         {},
	"internal/digest":      {},
	"internal/gpucheck":    {},
	"internal/jsonl":       {},
	"internal/llamaserver": {},
	"internal/pyjinja":     {},
	"internal/testenv":     {"contract", "internal/cache", "internal/llamaserver"},
	"internal/version":     {"llama"},
}

// TestImportRules: every package imports only what the design map allows it.
func TestImportRules(t *testing.T) {
	root := testenv.RepoRoot(t)
	const mod = "github.com/gojev/gojev"
	out := goCmd(t, root, nil, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(f[0], mod), "/")
		allowed, ruled := importRules[pkg]
		app := strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "internal/app/")
		if !ruled && !app {
			t.Errorf("package %q is not on the design map (docs/design.md, importRules)", pkg)
			continue
		}
		seen++
		for _, imp := range f[1:] {
			if imp != mod && !strings.HasPrefix(imp, mod+"/") {
				continue
			}
			dep := strings.TrimPrefix(strings.TrimPrefix(imp, mod), "/")
			switch {
			case app && !strings.HasPrefix(dep, "cmd/"):
			case ruled && slices.Contains(allowed, dep):
			default:
				t.Errorf("%q imports %q, which the design map does not allow", pkg, dep)
			}
		}
	}
	assert.Greater(t, seen, 25, "go list listed the module's packages")
}

// TestBuildsWithoutCgo: with CGO_ENABLED=0 everything builds, jev among it. That jev decides
// through a llama-server (--runtime), as the cgo build does, and the commands that need the
// in-process runtime say so.
func TestBuildsWithoutCgo(t *testing.T) {
	root := testenv.RepoRoot(t)
	goCmd(t, root, []string{"CGO_ENABLED=0"}, "build", "./...")
	jev := filepath.Join(t.TempDir(), "jev")
	goCmd(t, root, []string{"CGO_ENABLED=0"}, "build", "-o", jev, "./cmd/jev")

	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(jev, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err)
		}
		return code, stdout.String(), stderr.String()
	}
	code, _, stderr := run("parity")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "built without cgo")
	rows := filepath.Join(root, "examples", "tickets.jsonl")
	code, _, stderr = run("decide", "-m", testenv.SmallModel(t), "-i", rows)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "built without cgo")

	srv := testenv.LlamaServer(t, testenv.SmallModel(t))
	code, stdout, stderr := run("decide", "--runtime", srv.URL, "-i", rows, "--format", "jsonl")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	assert.Len(t, lines, 12)
	assert.Contains(t, lines[0], `"backend":"`+srv.URL+`"`)
	assert.Contains(t, stderr, "rows 12, decided 12, errors 0")
}

func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(t, "needs the go command: %v", err)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "go %s:\n%s", strings.Join(args, " "), b)
	return string(b)
}

// TestAtomicWritesGoThroughOneHelper: every file replaced by a rename (priors, profiles, run
// files, reports) is written by internal/atomicfile, which syncs the file and its folder; a
// bare os.Rename elsewhere would leave an empty file after a crash.
func TestAtomicWritesGoThroughOneHelper(t *testing.T) {
	root := testenv.RepoRoot(t)
	var renames []string
	for _, rel := range goSources(t, root) {
		if strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(filepath.ToSlash(rel), "internal/atomicfile/") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(root, rel))
		require.NoError(t, err)
		if strings.Contains(string(b), "os.Rename(") {
			renames = append(renames, rel)
		}
	}
	require.NotEmpty(t, goSources(t, root))
	assert.Empty(t, renames, "os.Rename outside internal/atomicfile")
}

// goSources returns the repository's .go files, relative to root, outside third_party and
// dot folders (.git, .ci).
func goSources(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel == "third_party" || strings.HasPrefix(d.Name(), ".") && rel != ".") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, rel)
		}
		return nil
	})
	require.NoError(t, err)
	return files
}
