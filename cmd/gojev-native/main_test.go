package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExportLines(t *testing.T) {
	got, err := exportLines("/home/u/.cache/gojev/native/561120ee9a5fe406")
	require.NoError(t, err)
	assert.Equal(t, `export CGO_ENABLED=1
export CGO_CFLAGS="-O2 -g -I/home/u/.cache/gojev/native/561120ee9a5fe406/include"
export CGO_LDFLAGS="-L/home/u/.cache/gojev/native/561120ee9a5fe406/lib"
`, got)
}

func TestExportLinesQuoting(t *testing.T) {
	cases := []struct{ entry, cflags, ldflags string }{
		{"/a b/e", `"-O2 -g '-I/a b/e/include'"`, `"'-L/a b/e/lib'"`},
		{"/$HOME/e", `'-O2 -g -I/$HOME/e/include'`, `'-L/$HOME/e/lib'`},
	}
	for _, c := range cases {
		got, err := exportLines(c.entry)
		require.NoError(t, err, c.entry)
		lines := strings.Split(got, "\n")
		assert.Equal(t, "export CGO_CFLAGS="+c.cflags, lines[1], c.entry)
		assert.Equal(t, "export CGO_LDFLAGS="+c.ldflags, lines[2], c.entry)
	}
	_, err := exportLines(`/both'"/e`)
	assert.Error(t, err)
}

// TestExportLinesShell evaluates the lines in bash and splits the values as the go command does
// (cmd/internal/quoted), so that a folder with spaces or quotes reaches cgo as one argument.
func TestExportLinesShell(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, entry := range []string{"/plain/e", "/a b/e", "/it's here/e", `/q"uote/e`, "/$HOME/`x`/e", `/back\slash!/e`} {
		lines, err := exportLines(entry)
		require.NoError(t, err, entry)
		out, err := exec.Command(bash, "-c", lines+`printf '%s\n%s\n%s' "$CGO_ENABLED" "$CGO_CFLAGS" "$CGO_LDFLAGS"`).Output()
		require.NoError(t, err, entry)
		vals := strings.Split(string(out), "\n")
		require.Len(t, vals, 3)
		assert.Equal(t, "1", vals[0])
		assert.Equal(t, []string{"-O2", "-g", "-I" + entry + "/include"}, splitQuoted(t, vals[1]), entry)
		assert.Equal(t, []string{"-L" + entry + "/lib"}, splitQuoted(t, vals[2]), entry)
	}
}

// splitQuoted is cmd/internal/quoted.Split: fields separated by white space, each possibly
// wrapped in single or double quotes (no escapes).
func splitQuoted(t *testing.T, s string) []string {
	var args []string
	for len(s) > 0 {
		s = strings.TrimLeft(s, " \t\n\r")
		if s == "" {
			break
		}
		if s[0] == '"' || s[0] == '\'' {
			q := s[0]
			i := strings.IndexByte(s[1:], q)
			require.GreaterOrEqual(t, i, 0, "unterminated quote in %q", s)
			args = append(args, s[1:1+i])
			s = s[2+i:]
			continue
		}
		i := strings.IndexAny(s, " \t\n\r")
		if i < 0 {
			i = len(s)
		}
		args = append(args, s[:i])
		s = s[i:]
	}
	return args
}

func TestGoQuote(t *testing.T) {
	for in, want := range map[string]string{
		"-I/x/include": "-I/x/include",
		"-I/a b":       "'-I/a b'",
		"-I/a'b":       `"-I/a'b"`,
		`-I/a"b`:       `'-I/a"b'`,
	} {
		got, err := goQuote(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, in)
	}
	_, err := goQuote(`-I/a'"b`)
	assert.Error(t, err)
}

func TestParseGoListModule(t *testing.T) {
	dep := []byte(`{
	"Path": "github.com/gojev/gojev",
	"Version": "v0.0.0-20261201000000-7fa0629abcde",
	"Time": "2026-12-01T00:00:00Z",
	"Dir": "/root/go/pkg/mod/github.com/gojev/gojev@v0.0.0-20261201000000-7fa0629abcde",
	"GoMod": "/root/go/pkg/mod/cache/download/github.com/gojev/gojev/@v/v0.0.0-20261201000000-7fa0629abcde.mod",
	"GoVersion": "1.26.0"
}`)
	dir, err := parseGoListModule(dep)
	require.NoError(t, err)
	assert.Equal(t, "/root/go/pkg/mod/github.com/gojev/gojev@v0.0.0-20261201000000-7fa0629abcde", dir)

	main := []byte(`{"Path": "github.com/gojev/gojev", "Main": true, "Dir": "/work/main", "GoMod": "/work/main/go.mod", "GoVersion": "1.26.0"}`)
	dir, err = parseGoListModule(main)
	require.NoError(t, err)
	assert.Equal(t, "/work/main", dir)

	replaced := []byte(`{"Path": "github.com/gojev/gojev", "Version": "v1.0.0", "Replace": {"Path": "../gojev", "Dir": "/src/gojev"}}`)
	dir, err = parseGoListModule(replaced)
	require.NoError(t, err)
	assert.Equal(t, "/src/gojev", dir)

	_, err = parseGoListModule([]byte(`{"Path": "github.com/gojev/gojev", "Version": "v1.0.0"}`))
	assert.ErrorContains(t, err, "not downloaded")
	_, err = parseGoListModule([]byte(`{"Path": "github.com/gojev/gojev", "Error": {"Err": "module not found"}}`))
	assert.ErrorContains(t, err, "module not found")
	_, err = parseGoListModule([]byte(`{"Path": "example.com/other", "Dir": "/x"}`))
	assert.Error(t, err)
	_, err = parseGoListModule([]byte(`go: not json`))
	assert.Error(t, err)
}

func TestModuleDirFromBuildInfo(t *testing.T) {
	const v = "v0.0.0-20261201000000-7fa0629abcde"
	want := filepath.Join("/mc", "github.com", "gojev", "gojev@"+v)

	// go run github.com/gojev/gojev/cmd/gojev-native@version, outside any module.
	bi := &debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: v}}
	dir, err := moduleDirFromBuildInfo(bi, "/mc")
	require.NoError(t, err)
	assert.Equal(t, want, dir)

	// go run github.com/gojev/gojev/cmd/gojev-native in a module that requires gojev.
	bi = &debug.BuildInfo{Main: debug.Module{Path: "example.com/judge", Version: "(devel)"},
		Deps: []*debug.Module{{Path: "github.com/stretchr/testify", Version: "v1.12.1"}, {Path: modulePath, Version: v}}}
	dir, err = moduleDirFromBuildInfo(bi, "/mc")
	require.NoError(t, err)
	assert.Equal(t, want, dir)

	// Replaced by another version (escaped path) or by an absolute folder.
	bi = &debug.BuildInfo{Deps: []*debug.Module{{Path: modulePath, Version: v, Replace: &debug.Module{Path: "github.com/Fork/gojev", Version: "v1.2.3"}}}}
	dir, err = moduleDirFromBuildInfo(bi, "/mc")
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/mc", "github.com", "!fork", "gojev@v1.2.3"), dir)
	bi = &debug.BuildInfo{Deps: []*debug.Module{{Path: modulePath, Version: v, Replace: &debug.Module{Path: "/src/gojev"}}}}
	dir, err = moduleDirFromBuildInfo(bi, "/mc")
	require.NoError(t, err)
	assert.Equal(t, "/src/gojev", dir)

	// A checkout's own build has no version; a binary without gojev has nothing.
	_, err = moduleDirFromBuildInfo(&debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: "(devel)"}}, "/mc")
	assert.Error(t, err)
	_, err = moduleDirFromBuildInfo(&debug.BuildInfo{Main: debug.Module{Path: "example.com/x"}}, "/mc")
	assert.Error(t, err)
	_, err = moduleDirFromBuildInfo(&debug.BuildInfo{Main: debug.Module{Path: modulePath, Version: v}}, "")
	assert.Error(t, err)
}

func TestParseArgs(t *testing.T) {
	for _, c := range []struct {
		args        []string
		sub, cache  string
		errContains string
	}{
		{nil, "install", "", ""},
		{[]string{"install"}, "install", "", ""},
		{[]string{"env", "--cache", "/c"}, "env", "/c", ""},
		{[]string{"--cache=/c", "install"}, "install", "/c", ""},
		{[]string{"--help"}, "help", "", ""},
		{[]string{"install", "-h"}, "help", "", ""},
		{[]string{"--cache"}, "", "", "needs a folder"},
		{[]string{"--cache="}, "", "", "needs a folder"},
		{[]string{"build"}, "", "", "unknown argument"},
		{[]string{"install", "env"}, "", "", "unknown argument"},
	} {
		got, err := parseArgs(c.args)
		if c.errContains != "" {
			assert.ErrorContains(t, err, c.errContains, c.args)
			continue
		}
		require.NoError(t, err, c.args)
		assert.Equal(t, c.sub, got.sub, c.args)
		assert.Equal(t, c.cache, got.cache, c.args)
	}
}

func TestHelp(t *testing.T) {
	var out, errb bytes.Buffer
	require.NoError(t, run([]string{"--help"}, &out, &errb))
	assert.Contains(t, out.String(), `eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"`)
	assert.Contains(t, out.String(), "~/.cache/gojev")
	assert.Empty(t, errb.String())
}

func TestPinnedCommitAndLastLine(t *testing.T) {
	pin := filepath.Join(t.TempDir(), "llama.cpp.pin")
	require.NoError(t, os.WriteFile(pin, []byte("# c\nLLAMA_CPP_TAG=v0.4.0\nLLAMA_CPP_COMMIT=80fb11ac\n"), 0o644))
	c, err := pinnedCommit(pin)
	require.NoError(t, err)
	assert.Equal(t, "80fb11ac", c)
	assert.Equal(t, "/c/native/k", lastLine("noise\n/c/native/k\n\n"))
	assert.Equal(t, "", lastLine(""))
}

// TestEachCloneHasItsOwnBuildTree: two clones share the built libraries (one cache entry) but
// not the CMake build tree, which CMake ties to the source folder it was configured from: with
// one tree for both, the second clone's make server failed ("does not match the source ...
// used to generate cache"). The same clone finds its own tree again.
func TestEachCloneHasItsOwnBuildTree(t *testing.T) {
	repo, err := filepath.Abs("../..")
	require.NoError(t, err)
	clone := func() string {
		dir := t.TempDir()
		for _, rel := range []string{"CMakeLists.txt", "third_party/build-native.sh", "third_party/llama.cpp.pin"} {
			b, err := os.ReadFile(filepath.Join(repo, rel))
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(dir, rel)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, rel), b, 0o644))
		}
		for _, sub := range []string{"csrc", "third_party/patches"} {
			entries, err := os.ReadDir(filepath.Join(repo, sub))
			require.NoError(t, err)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(repo, sub, e.Name()))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, sub, e.Name()), b, 0o644))
			}
		}
		return dir
	}
	tree := func(root string) string {
		cmd := exec.Command("bash", filepath.Join(root, "third_party", "build-native.sh"))
		cmd.Env = append(os.Environ(), "GOJEV_PRINT_BUILD_TREE=1", "GOJEV_CACHE="+filepath.Join(t.TempDir(), "cache"), "LLAMA_CPP_DIR=")
		out, err := cmd.Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	a, b := clone(), clone()
	ta, tb := tree(a), tree(b)
	assert.NotEqual(t, filepath.Base(ta), filepath.Base(tb), "two clones, two build trees")
	assert.Equal(t, filepath.Base(ta), filepath.Base(tree(a)), "a clone finds its own tree again")
}
