package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePluginTree copies fetch-plugin.sh into a temporary third_party/ beside a plugins.tsv whose
// vulkan row names a stand-in package, and puts a stand-in npm on PATH whose `npm pack` writes
// tarball (an npm-layout .tgz made here). It returns the script and the environment to run it.
func fakePluginTree(t *testing.T, tarball []byte, wantSHA string) (string, []string) {
	t.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the stand-in table row is for linux-x64")
	}
	dir := t.TempDir()
	tp := filepath.Join(dir, "third_party")
	require.NoError(t, os.MkdirAll(tp, 0o755))
	src, err := os.ReadFile(filepath.Join("..", "..", "third_party", "fetch-plugin.sh"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(tp, "fetch-plugin.sh"), src, 0o644))
	row := strings.Join([]string{"vulkan", "linux-x64", "@stand-in/linux-x64-vulkan@9.9.9", wantSHA,
		"package/bins/linux-x64-vulkan", "libggml-vulkan.so", "a Vulkan driver"}, "\t")
	require.NoError(t, os.WriteFile(filepath.Join(tp, "plugins.tsv"), []byte("# comment\n"+row+"\n"), 0o644))
	bin := filepath.Join(dir, "bin")
	require.NoError(t, os.MkdirAll(bin, 0o755))
	tgz := filepath.Join(dir, "pkg.tgz")
	require.NoError(t, os.WriteFile(tgz, tarball, 0o644))
	npm := "#!/bin/sh\n[ \"$1\" = pack ] || exit 9\necho \"$@\" >> " + filepath.Join(dir, "npm.log") + "\ncp " + tgz + " ./stand-in-9.9.9.tgz\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "npm"), []byte(npm), 0o755))
	env := append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "GOJEV_CACHE="+filepath.Join(dir, "cache"))
	return filepath.Join(tp, "fetch-plugin.sh"), env
}

// npmTarball builds a .tgz with the layout of node-llama-cpp's prebuilt packages.
func npmTarball(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	bins := filepath.Join(dir, "package", "bins", "linux-x64-vulkan")
	require.NoError(t, os.MkdirAll(bins, 0o755))
	for name, body := range map[string]string{
		"libggml-vulkan.so": "plugin", "libggml-base.so": "base", "libggml-cpu-x64.so": "not wanted",
		"_nlcBuildMetadata.json": `{"llamaCpp":{"release":"v0.4.0"}}`,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(bins, name), []byte(body), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "package", "LICENSE"), []byte("MIT"), 0o644))
	out := filepath.Join(t.TempDir(), "p.tgz")
	require.NoError(t, exec.Command("tar", "-czf", out, "-C", dir, "package").Run())
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	return b
}

func runScript(t *testing.T, script string, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return stdout.String(), stderr.String(), code
}

// TestFetchPluginVerifiesAndExtracts: the tarball's sha256 is checked before anything is
// extracted; a good one leaves the plugin and its libggml-base (nothing else) in the cache,
// and a second run finds them without calling npm.
func TestFetchPluginVerifiesAndExtracts(t *testing.T) {
	tgz := npmTarball(t)
	sum := sha256.Sum256(tgz)
	good := hex.EncodeToString(sum[:])

	script, env := fakePluginTree(t, tgz, strings.Repeat("0", 64))
	out, stderr, code := runScript(t, script, env, "vulkan")
	assert.Equal(t, 1, code, stderr)
	assert.Contains(t, stderr, "sha256 mismatch")
	assert.Empty(t, out)
	cache := strings.TrimPrefix(env[len(env)-1], "GOJEV_CACHE=")
	_, err := os.Stat(filepath.Join(cache, "plugins"))
	assert.True(t, os.IsNotExist(err), "nothing extracted from a tarball that fails its sha256")

	script, env = fakePluginTree(t, tgz, good)
	cache = strings.TrimPrefix(env[len(env)-1], "GOJEV_CACHE=")
	_, stderr, code = runScript(t, script, append(env, "GOJEV_NO_FETCH=1"), "vulkan")
	assert.Equal(t, 3, code, "GOJEV_NO_FETCH=1 before a fetch: "+stderr)
	out, stderr, code = runScript(t, script, env, "vulkan")
	require.Equal(t, 0, code, stderr)
	dest := filepath.Join(cache, "plugins", "vulkan-linux-x64-9.9.9")
	assert.Equal(t, filepath.Join(dest, "libggml-vulkan.so")+"\n", out)
	entries, err := os.ReadDir(dest)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{".complete", "LICENSE", "SHA256SUMS", "SOURCE", "_nlcBuildMetadata.json", "libggml-base.so", "libggml-vulkan.so"}, names)
	b, err := os.ReadFile(filepath.Join(dest, "libggml-base.so"))
	require.NoError(t, err)
	assert.Equal(t, "base", string(b))

	log := filepath.Join(filepath.Dir(filepath.Dir(script)), "npm.log")
	before, _ := os.ReadFile(log)
	out2, _, code := runScript(t, script, env, "vulkan")
	assert.Equal(t, 0, code)
	assert.Equal(t, out, out2)
	after, _ := os.ReadFile(log)
	assert.Equal(t, before, after, "a cached plugin costs no npm call")

	// A file changed in the cache is fetched again, not loaded.
	require.NoError(t, os.WriteFile(filepath.Join(dest, "libggml-vulkan.so"), []byte("tampered"), 0o644))
	_, _, code = runScript(t, script, append(env, "GOJEV_NO_FETCH=1"), "vulkan")
	assert.Equal(t, 3, code, "a tampered cache entry does not count as installed")

	_, stderr, code = runScript(t, script, env, "opencl")
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr, "usage")
	_, stderr, code = runScript(t, script, env, "cuda")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no prebuilt cuda plugin for linux-x64")
}

func TestParseGPUFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		gpu  string
		err  string
	}{
		{[]string{"install", "--gpu", "vulkan"}, "vulkan", ""},
		{[]string{"--gpu=cuda"}, "cuda", ""},
		{[]string{"env", "-gpu", "metal"}, "metal", ""},
		{[]string{"--gpu", "opencl"}, "", "want vulkan, cuda or metal"},
		{[]string{"--gpu"}, "", "needs one of"},
	} {
		cfg, err := parseArgs(c.args)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.args)
			continue
		}
		require.NoError(t, err, c.args)
		assert.Equal(t, c.gpu, cfg.gpu, c.args)
	}
}
