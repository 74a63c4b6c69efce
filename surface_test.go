package gojev_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
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
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && (rel == "third_party" || strings.HasPrefix(d.Name(), ".") && rel != ".") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"C"` {
				cgo = append(cgo, filepath.ToSlash(filepath.Dir(rel)))
			}
		}
		return nil
	})
	require.NoError(t, err)
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
	assert.ElementsMatch(t, []string{"", "/backend", "/calibrate", "/cmd/gojev-native", "/cmd/jev", "/contract", "/debias", "/gguf", "/llama", "/pyjson", "/render"}, public)
	deps := goCmd(t, root, nil, "list", "-deps", ".")
	for _, cliOnly := range []string{"gonum.org/v1/plot", "github.com/schollz/progressbar", "golang.org/x/term"} {
		assert.NotContains(t, deps, cliOnly, "the root package's dependencies")
	}
}

// TestBuildsWithoutCgo: with CGO_ENABLED=0 the front door (HTTP runtime), the pure-Go packages
// and the installer build.
func TestBuildsWithoutCgo(t *testing.T) {
	root := testenv.RepoRoot(t)
	goCmd(t, root, []string{"CGO_ENABLED=0"}, "build", ".", "./backend", "./calibrate", "./contract", "./debias", "./pyjson", "./render", "./gguf", "./cmd/gojev-native")
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
