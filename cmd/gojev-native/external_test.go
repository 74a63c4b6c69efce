package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/testenv"
)

// readmeProgram returns the Go program of docs/library.md's "Use it from your Go module"
// section (the first go code block after that heading), as committed at HEAD: the test builds
// exactly what the docs tell a user to write. It prints the chosen option id and its probability.
func readmeProgram(t *testing.T, root string) string {
	readme, err := gitOut(root, "show", "HEAD:docs/library.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(readme, "\n## Use it from your Go module")
	require.True(t, ok, "docs/library.md has no \"## Use it from your Go module\" section")
	_, code, ok := strings.Cut(section, "```go\n")
	require.True(t, ok, "the section has no go code block")
	code, _, ok = strings.Cut(code, "```")
	require.True(t, ok)
	require.Contains(t, code, "package main")
	return code
}

// TestExternalModule does what a user of gojev does, from a new module outside the repository:
// go get gojev (the checkout's HEAD, served as a module zip by a file:// GOPROXY placed before
// the normal one, which still serves the dependencies), eval the output of gojev-native install,
// go build, run a program that decides one row on the small model.
//
// It uses the native cache as it is (instant when `make native` has run on this machine; a cold
// cache makes install build llama.cpp, minutes, which may need a longer -timeout) and the
// user's GOMODCACHE (a temporary one would download every dependency again). The module version
// is a pseudo-version of HEAD, so each commit adds one read-only folder to the module cache.
func TestExternalModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module from the module cache")
	}
	model := testenv.SmallModel(t)
	for _, tool := range []string{"git", "bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Missing(t, "needs %s on PATH: %v", tool, err)
		}
	}
	root := testenv.RepoRoot(t)
	if _, err := gitOut(root, "rev-parse", "--git-dir"); err != nil {
		testenv.Missing(t, "needs a git checkout of gojev at %s: %v", root, err)
	}
	touchHead(root)
	if _, err := gitOut(root, "cat-file", "-e", "HEAD:cmd/gojev-native/main.go"); err != nil {
		testenv.Missing(t, "HEAD has no cmd/gojev-native (the module zip holds committed files only; commit it first)")
	}
	if st, _ := gitOut(root, "status", "--porcelain", "--", "third_party", "cmd/gojev-native", "llama", "CMakeLists.txt", "csrc"); st != "" {
		t.Logf("note: the module is HEAD; these uncommitted changes are not in it:\n%s", st)
	}
	program := readmeProgram(t, root)

	tmp := t.TempDir()
	step := stepper(t)

	// A GOPROXY file tree with HEAD as a pseudo-version.
	hash, err := gitOut(root, "rev-parse", "HEAD")
	require.NoError(t, err)
	stamp, err := gitOut(root, "log", "-1", "--format=%cd", "--date=format-local:%Y%m%d%H%M%S")
	require.NoError(t, err)
	when, err := time.Parse("20060102150405", stamp)
	require.NoError(t, err, "commit time %q", stamp)
	version := "v0.0.0-" + stamp + "-" + hash[:12]
	vdir := filepath.Join(tmp, "proxy", "github.com", "gojev", "gojev", "@v")
	require.NoError(t, os.MkdirAll(vdir, 0o755))
	_, err = gitOut(root, "archive", "--format=zip", "--prefix="+modulePath+"@"+version+"/", "-o", filepath.Join(vdir, version+".zip"), "HEAD")
	require.NoError(t, err)
	gomod, err := gitOut(root, "show", "HEAD:go.mod")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(vdir, version+".mod"), []byte(gomod+"\n"), 0o644))
	info := fmt.Sprintf(`{"Version":%q,"Time":%q}`, version, when.UTC().Format(time.RFC3339))
	require.NoError(t, os.WriteFile(filepath.Join(vdir, version+".info"), []byte(info+"\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(vdir, "list"), []byte(version+"\n"), 0o644))
	step("module zip of HEAD as %s", version)

	// The go command's environment: the file proxy first, no checksum database for gojev, the
	// user's GOFLAGS plus -mod=mod, and no CGO_* flags of our own (install prints them).
	goenv := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		require.NoError(t, err)
		return strings.TrimSpace(string(out))
	}
	proxy, goflags, modcache := goenv("GOPROXY"), goenv("GOFLAGS"), goenv("GOMODCACHE")
	if proxy == "off" {
		testenv.Missing(t, "needs a Go module proxy for the dependencies (GOPROXY=off)")
	}
	env := []string{
		"GOPROXY=file://" + filepath.ToSlash(filepath.Join(tmp, "proxy")) + "," + proxy,
		"GONOSUMDB=" + modulePath,
		"GOFLAGS=" + strings.TrimSpace(goflags+" -mod=mod"),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "GOPROXY", "GONOSUMDB", "GOFLAGS", "GOWORK", "GOTOOLCHAIN", "CGO_ENABLED", "CGO_CFLAGS", "CGO_LDFLAGS", "CGO_CPPFLAGS", "CGO_CXXFLAGS", "GOJEV_SRC_DIR", "GOJEV_NO_LINK", "GOJEV_NO_BUILD":
			continue
		}
		env = append(env, kv)
	}

	judge := filepath.Join(tmp, "judge")
	require.NoError(t, os.MkdirAll(judge, 0o755))
	sh := func(script string, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", "set -euo pipefail\n" + script, "bash"}, args...)...)
		cmd.Dir = judge
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "%s\nstderr:\n%s", script, stderr.String())
		return string(out)
	}
	sh("go mod init example.com/judge")
	require.NoError(t, os.WriteFile(filepath.Join(judge, "main.go"), []byte(program), 0o644))
	step("go mod init example.com/judge")
	sh(`go get "$1"`, modulePath+"@"+version)
	step("go get %s@%s", modulePath, version)
	sh("go mod tidy")
	step("go mod tidy")
	moddir := filepath.Join(modcache, "github.com", "gojev", "gojev@"+version)
	require.DirExists(t, moddir)
	// What the library costs a user's go.mod: the CLI's chart and progress-bar modules stay out.
	usermod, err := os.ReadFile(filepath.Join(judge, "go.mod"))
	require.NoError(t, err)
	t.Logf("the user's go.mod after tidy:\n%s", usermod)
	for _, cliOnly := range []string{"gonum.org/v1/plot", "github.com/schollz/progressbar", "golang.org/x/term"} {
		assert.NotContains(t, string(usermod), cliOnly)
	}

	exports := sh("go run " + modulePath + "/cmd/gojev-native install")
	step("gojev-native install")
	t.Logf("install printed:\n%s", exports)
	lines := strings.Split(strings.TrimSpace(exports), "\n")
	require.Len(t, lines, 3, exports)
	assert.Equal(t, "export CGO_ENABLED=1", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "export CGO_CFLAGS="), lines[1])
	assert.True(t, strings.HasPrefix(lines[2], "export CGO_LDFLAGS="), lines[2])
	assert.Equal(t, exports, sh("go run "+modulePath+"/cmd/gojev-native env"), "env prints what install printed")
	step("gojev-native env")
	// The #cgo -I/-L of package llama name ${SRCDIR}/../third_party/native, which is not there in
	// the module cache: the exported search paths alone must make the build link.
	assert.NoDirExists(t, filepath.Join(moddir, "third_party", "native"))
	assert.NoDirExists(t, filepath.Join(moddir, "third_party", "llama.cpp"))

	sh(`eval "$(go run ` + modulePath + `/cmd/gojev-native install)"` + "\ngo build -o judge .")
	step("eval install; go build")
	out := sh(`./judge "$1"`, model)
	step("run the program on %s", filepath.Base(model))
	t.Logf("program printed: %s", strings.TrimSpace(out))
	checkDecision(t, out, program)

	// Files of jev and of a Go program through package batch are one kind of file: the program
	// resumes a shard jev left half done and writes another shard itself; jev merge joins them
	// with jev's own shard, and jev --resume finds the program's shard complete.
	jev := filepath.Join(tmp, "jev")
	goBuild := exec.Command("go", "build", "-o", jev, "./cmd/jev")
	goBuild.Dir = root
	b, err := goBuild.CombinedOutput()
	require.NoError(t, err, "%s", b)
	require.NoError(t, os.MkdirAll(filepath.Join(judge, "shards"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(judge, "shards", "main.go"), []byte(shardProgram), 0o644))
	sh(`eval "$(go run ` + modulePath + `/cmd/gojev-native install)"` + "\ngo build -o shards-prog ./shards")
	step("go build the batch program")
	rows := filepath.Join(root, "examples", "tickets.jsonl")
	parts := filepath.Join(tmp, "parts")
	jevRun := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(jev, args...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		_, err := cmd.Output()
		require.NoError(t, err, "jev %s: %s", strings.Join(args, " "), stderr.String())
		return stderr.String()
	}
	for i := range 2 {
		jevRun("decide", "-m", model, "-t", "2", "-q", "--shard", fmt.Sprintf("%d/3", i), "-i", rows, "-o", filepath.Join(parts, fmt.Sprintf("part-%d.jsonl", i)))
	}
	// Shard 1 as a kill leaves it: its first record only, the run file saying it did not finish.
	p1 := filepath.Join(parts, "part-1.jsonl")
	b, err = os.ReadFile(p1)
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "\n")
	require.NoError(t, os.WriteFile(p1, []byte(first+"\n"), 0o644))
	out = sh(`./shards-prog "$@"`, model, rows, parts)
	step("the program resumes shard 1 and decides shard 2")
	t.Logf("batch program printed: %s", strings.TrimSpace(out))
	assert.Contains(t, out, "resumed part-1.jsonl: kept 1, skipped 1, decided 3")
	assert.Contains(t, out, "wrote part-2.jsonl: decided 4")
	merged := filepath.Join(tmp, "merged.jsonl")
	msg := jevRun("merge", "-i", rows, filepath.Join(parts, "part-*.jsonl"), "-o", merged)
	assert.Contains(t, msg, "12 records from 3 parts, every input line once")
	msg = jevRun("decide", "-m", model, "-t", "2", "--shard", "2/3", "--resume", "-i", rows, "-o", filepath.Join(parts, "part-2.jsonl"))
	assert.Contains(t, msg, "skipped 4 already in the output")
	step("jev merge and jev --resume on the program's files")
}

// shardProgram is a Go program that uses package batch as jev decide does: it resumes
// <parts>/part-1.jsonl (shard 1 of 3) with Run and a Resume, writing its run file, and decides
// <parts>/part-2.jsonl (shard 2 of 3) with a Job.
const shardProgram = `package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/batch"
)

func main() {
	model, rows, parts := os.Args[1], os.Args[2], os.Args[3]
	ctx := context.Background()
	d, err := gojev.Open(ctx, model, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	id, err := gojev.ModelIdentity(d.Check().Model.Path, d.Check().Model.Name)
	if err != nil {
		log.Fatal(err)
	}
	runFile := func(path string, s batch.Shard, sum batch.Summary, start time.Time) {
		m := &batch.RunFile{Input: rows, Shard: s.Spec(), Model: &id, PromptVersion: d.Check().PromptVersion,
			Backend: d.Check().Backend, Decode: d.Check().Decode, Started: start, Finished: true,
			ElapsedS: time.Since(start).Seconds(), Rows: sum.Rows, Decided: sum.Decided, Errors: sum.Errors, Skipped: sum.Skipped}
		m.SetOptions(d.Options()) // the contract and bias control, as jev decide records them
		if err := m.Save(batch.RunFilePath(path)); err != nil {
			log.Fatal(err)
		}
	}

	// Resume the shard jev left half done.
	p1 := filepath.Join(parts, "part-1.jsonl")
	start := time.Now()
	r, err := batch.OpenResume(p1)
	if err != nil {
		log.Fatal(err)
	}
	in, _ := os.Open(rows)
	s1 := batch.Shard{I: 1, N: 3}
	sum, err := batch.Run(ctx, d, in, r, batch.Config{Shard: s1, Skip: r.Skip})
	in.Close()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		log.Fatal(err)
	}
	runFile(p1, s1, sum, start)
	fmt.Printf("resumed part-1.jsonl: kept %d, skipped %d, decided %d\n", r.Records, sum.Skipped, sum.Decided)

	// Decide shard 2 from scratch, as jev decide --shard 2/3 does (the run file written too).
	job := batch.Job{Input: rows, Output: filepath.Join(parts, "part-2.jsonl"), Shard: batch.Shard{I: 2, N: 3}, Decider: d}
	if sum, err = job.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("wrote part-2.jsonl: decided %d\n", sum.Decided)
}
`

// checkDecision checks the README program's output: one of its option ids and a probability
// in (0,1].
func checkDecision(t *testing.T, out, program string) {
	f := strings.Fields(lastLine(out))
	require.Len(t, f, 2, out)
	assert.Contains(t, program, `ID: "`+f[0]+`", Description`, "the chosen id is one of the program's options")
	p, err := strconv.ParseFloat(f[1], 64)
	require.NoError(t, err, out)
	assert.Greater(t, p, 0.0)
	assert.LessOrEqual(t, p, 1.0)
}

// touchHead reads the files that name HEAD's commit, so that go test's result cache (which
// records the files a test opens, not what a child git reads) runs the test again after a commit.
func touchHead(root string) {
	head, err := gitOut(root, "rev-parse", "--path-format=absolute", "--git-path", "HEAD")
	if err != nil {
		return
	}
	b, _ := os.ReadFile(head)
	if ref, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "ref: "); ok {
		if p, err := gitOut(root, "rev-parse", "--path-format=absolute", "--git-path", ref); err == nil {
			_, _ = os.ReadFile(p)
		}
		if p, err := gitOut(root, "rev-parse", "--path-format=absolute", "--git-path", "packed-refs"); err == nil {
			_, _ = os.ReadFile(p)
		}
	}
}

// gitOut runs git in dir with TZ=UTC (for format-local dates) and returns its trimmed stdout.
func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "TZ=UTC")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(exit.Stderr)))
		}
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// stepper returns a function that logs each step with the time since the previous one.
func stepper(t *testing.T) func(format string, args ...any) {
	last := time.Now()
	return func(format string, args ...any) {
		t.Helper()
		now := time.Now()
		t.Logf("%6.2fs  %s", now.Sub(last).Seconds(), fmt.Sprintf(format, args...))
		last = now
	}
}
