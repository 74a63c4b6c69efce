package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/app/bench"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/systemone"
)

// The tests named TestServeAlone* time a server under load: make test runs them in a go test
// of their own after the others (no other test binary sharing the CPU with them).

// lockedBuffer is a bytes.Buffer written by a process and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// serveProc is a jev serve process a test started.
type serveProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	done   chan error // the process's exit
}

// startServe starts jev serve on the small model with args, on a free port, and waits for the
// line saying where it listens. The process is killed when the test ends.
func startServe(t *testing.T, bin string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "-m", testenv.SmallModel(t), "-t", "2", "--port", "0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	p := &serveProc{cmd: cmd, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = p.stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	go func() { p.done <- cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", p.stderr.String())
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+), `).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	p.url = m[1]
	return p
}

// exit waits for the process's exit (at most within) and returns its code.
func (p *serveProc) exit(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case err := <-p.done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(within):
		t.Fatalf("jev serve still running after %s: %s", within, p.stderr.String())
		return -1
	}
}

// inFlight is the requests in flight /readyz reports.
func (p *serveProc) inFlight(t *testing.T) int {
	resp, err := http.Get(p.url + "/readyz")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var body struct {
		Requests int `json:"requests_in_flight"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return body.Requests
}

// intentRequests are n System One requests from the Banking77 rows after the first 400 of
// test-8opt.jsonl: each a message and a noul question for each of its row's 8 intents.
func intentRequests(t *testing.T, n int) ([][]byte, []int) {
	t.Helper()
	rows := testenv.Rows(t, testenv.SharedData(t, "banking77/test-8opt.jsonl"), 400+n)[400:]
	var bodies [][]byte
	var qs []int
	for _, r := range rows {
		req := &systemone.Request{Model: systemone.DefaultModel, State: r.State}
		for _, o := range r.Options {
			req.Questions = append(req.Questions, systemone.Named{Name: o.ID, Question: gojev.Noul{
				Instructions: fmt.Sprintf("Does the customer's message express the intent %q?", strings.TrimSuffix(o.Description, "."))}})
		}
		b, err := json.Marshal(req)
		require.NoError(t, err)
		bodies, qs = append(bodies, b), append(qs, len(req.Questions))
	}
	require.Len(t, bodies, n)
	return bodies, qs
}

// Without keys the server stays on the loopback interface; limits and flags that contradict
// each other are refused before any model is loaded.
func TestServeRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--host", "0.0.0.0"}, "needs --api-key"},
		{[]string{"--debias", "pride"}, "needs --prior FILE"},
		{[]string{"--timeout", "1m", "--shutdown-timeout", "10s"}, "would cut accepted requests short"},
		{[]string{"--timeout", "0"}, "must be positive"},
		{[]string{"--tls-cert", "cert.pem"}, "go together"},
		{[]string{"--tls-cert", "missing.pem", "--tls-key", "missing.key"}, "--tls-cert/--tls-key"},
		{[]string{"--score-reading", "cyclic"}, "want both-orders or listed"},
		{[]string{"--calibration", "missing-profiles"}, "--calibration: stat missing-profiles"},
	} {
		var stdout, stderr strings.Builder
		code := run(context.Background(), append([]string{"serve"}, tc.args...), strings.NewReader(""), &stdout, &stderr)
		assert.Equal(t, 2, code, "%v", tc.args)
		assert.Contains(t, stderr.String(), tc.want, "%v", tc.args)
	}
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"serve", "-m", testenv.SmallModel(t), "-t", "1", "--no-warmup", "--max-questions", "100", "--max-in-flight", "50"},
		strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "could never be admitted")
}

// SIGTERM with 24 requests of 8 questions in flight: every one is answered with a 200, and the
// server exits 0 (before, the drain gave up after 30 s, shorter than a request may take, and
// exited 1 dropping the connections). Then a second signal during a drain stops at once.
func TestServeAloneDrainsOnSIGTERM(t *testing.T) {
	bin := buildJev(t)
	bodies, qs := intentRequests(t, 24)
	p := startServe(t, bin, "--timeout", "5m") // every one of the 24 admitted, on a slow machine too
	var sigterm time.Time
	var during *http.Response
	var readyDuring int
	rep, err := bench.MeasureBurst(context.Background(), bench.BurstConfig{URL: p.url, Bodies: bodies, Questions: qs, GiveUp: time.Nanosecond,
		AfterSent: func() {
			assert.Eventually(t, func() bool { return p.inFlight(t) == 24 }, 30*time.Second, 20*time.Millisecond)
			sigterm = time.Now()
			assert.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
			time.Sleep(300 * time.Millisecond)
			// While it drains: a new request is told to go elsewhere, and so is a load balancer.
			var err error
			during, err = http.Post(p.url+"/v1/systemone", "application/json", bytes.NewReader(bodies[0]))
			if assert.NoError(t, err) {
				during.Body.Close()
			}
			if resp, err := http.Get(p.url + "/readyz"); assert.NoError(t, err) {
				readyDuring = resp.StatusCode
				resp.Body.Close()
			}
		}})
	require.NoError(t, err)
	t.Logf("drain: %d answered, %d failed, the last %.1f s after SIGTERM", rep.Answered, rep.Failed, time.Since(sigterm).Seconds())
	assert.Equal(t, map[string]int{"200": 24}, rep.First, "every accepted request answered: %s", p.stderr.String())
	if assert.NotNil(t, during) {
		assert.Equal(t, http.StatusServiceUnavailable, during.StatusCode, "a request after SIGTERM")
		assert.NotEmpty(t, during.Header.Get("Retry-After"))
	}
	assert.Equal(t, http.StatusServiceUnavailable, readyDuring, "/readyz while draining")
	assert.Equal(t, 0, p.exit(t, 30*time.Second), p.stderr.String())
	assert.Contains(t, p.stderr.String(), "jev serve: draining")
	assert.Contains(t, p.stderr.String(), "jev serve: stopped")
	assert.Equal(t, 24, strings.Count(p.stderr.String(), "path=/v1/systemone status=200 "), "one log line a request")

	p = startServe(t, bin)
	go func() {
		_, _ = bench.MeasureBurst(context.Background(), bench.BurstConfig{URL: p.url, Bodies: bodies[:8], Questions: qs[:8], GiveUp: time.Nanosecond})
	}()
	require.Eventually(t, func() bool { return p.inFlight(t) > 0 }, 30*time.Second, 20*time.Millisecond)
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	time.Sleep(200 * time.Millisecond)
	t0 := time.Now()
	require.NoError(t, p.cmd.Process.Signal(os.Interrupt))
	assert.Equal(t, 1, p.exit(t, 5*time.Second), "a second signal: exit 1 at once: %s", p.stderr.String())
	assert.Less(t, time.Since(t0), 3*time.Second)
	assert.Regexp(t, `stopped at once by a second signal: [1-8] request\(s\) in flight dropped`, p.stderr.String())
}

// 48 requests of 8 questions at once on the small model with --timeout 20s: every first answer
// is a 200, or a 429 or 503 within 3 s carrying Retry-After; none waits out the timeout only to
// fail; retrying as told, all 48 are answered (before, the ones at the back of the queue waited
// the whole timeout and got a 503).
func TestServeAloneHoldsABurst(t *testing.T) {
	bin := buildJev(t)
	bodies, qs := intentRequests(t, 48)
	p := startServe(t, bin, "--timeout", "20s")
	rep, err := bench.MeasureBurst(context.Background(), bench.BurstConfig{URL: p.url, Bodies: bodies, Questions: qs, GiveUp: 5 * time.Minute})
	require.NoError(t, err)
	var text strings.Builder
	rep.WriteText(&text)
	t.Log(text.String())
	for i, r := range rep.PerRequest {
		switch r.FirstStatus {
		case http.StatusOK:
			assert.Less(t, r.FirstMS, 20000.0, "request %d: answered within the timeout", i)
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			assert.Less(t, r.FirstMS, 3000.0, "request %d: refused within 3 s", i)
			assert.Positive(t, r.FirstRetryMS, "request %d: told when to retry", i)
		default:
			t.Errorf("request %d: first answer %d (%s)", i, r.FirstStatus, r.Error)
		}
	}
	assert.Equal(t, 48, rep.Answered, "every request answered after retrying as told")
	assert.Positive(t, rep.First["200"], "some admitted at once")
	assert.NotContains(t, p.stderr.String(), "did not finish within its deadline", "no admitted request timed out")
}

// The clients people install, unmodified, against jev serve on the small model: TypeSafe's
// official typesafe-sdk (testdata/sdk_check.py: every type, errors, 24 concurrent requests),
// jev-eval (run, then report) and jev-grep with its own defaults (32 in flight, 15 s a request,
// its default model jev-1.13.0), only the URL and a key given.
func TestServeAloneAnswersEveryClient(t *testing.T) {
	python := testenv.SDKPython(t)
	venv := filepath.Dir(python)
	bin := buildJev(t)
	p := startServe(t, bin, "-c", "512", "--api-key", "test-key")
	testdata := filepath.Join(testenv.RepoRoot(t), "systemone", "testdata")
	home := t.TempDir()
	clean := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_CACHE_HOME=" + filepath.Join(home, "cache"), "XDG_CONFIG_HOME=" + filepath.Join(home, "config")}
	client := func(name string, env []string, args ...string) (string, int) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // jev-eval has no timeout of its own
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Dir, cmd.Env = filepath.Join(testdata, "clients"), append(append([]string{}, clean...), env...)
		out, err := cmd.CombinedOutput()
		t.Logf("%s:\n%s", name, out)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			require.NoError(t, err, name)
		}
		return string(out), code
	}

	out, code := client("typesafe-sdk", []string{"TYPESAFE_BASE_URL=" + p.url, "TYPESAFE_API_KEY=test-key", "JEV_N_CTX=512"},
		python, filepath.Join(testdata, "sdk_check.py"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "all checks passed")
	assert.GreaterOrEqual(t, strings.Count(out, "\nok "), 20)

	out, code = client("jev-grep", []string{"JEV_API=gateway", "JEV_GATEWAY_URL=" + p.url + "/v1/systemone", "JEV_GATEWAY_API_KEY=test-key"},
		filepath.Join(venv, "jgrep"), "-n", "the customer is asking about a refund or a charge", "lines.txt")
	assert.Contains(t, []int{0, 1}, code, "jev-grep judged every line (exit 0 or 1, not 2): %s", out)
	assert.NotContains(t, out, "gave up")
	assert.NotContains(t, out, "HTTP ")

	cache := filepath.Join(home, "answers.jsonl")
	out, code = client("jev-eval run", []string{"JEV_API_KEY=test-key", "TYPESAFE_AI_BASE_URL=" + p.url + "/v1"},
		filepath.Join(venv, "jev-eval"), "run", "--data", "eval-rows.jsonl", "--config", "eval-questions.json", "--cache", cache)
	assert.Equal(t, 0, code, out)
	assert.NotContains(t, out, "rejected")
	out, code = client("jev-eval report", nil, filepath.Join(venv, "jev-eval"), "report", "--cache", cache)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "team")
	assert.Contains(t, out, "refund")

	resp, err := http.Get(p.url + "/readyz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, 0, p.inFlight(t), "every request's work given back")
	models := regexp.MustCompile(`path=/v1/systemone status=(\d+)`).FindAllStringSubmatch(p.stderr.String(), -1)
	for _, m := range models {
		assert.Contains(t, []string{"200", "401", "404", "413", "422"}, m[1], "only the statuses sdk_check.py asks for")
	}
}

// --tls-cert and --tls-key serve HTTPS: a client that trusts the certificate is answered, and
// the server stops when its context ends (a signal, in main), exiting 0.
func TestServeTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	kb, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdoutR, stdoutW := io.Pipe()
	var stderr lockedBuffer
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"serve", "-m", testenv.SmallModel(t), "-t", "2", "--port", "0", "--no-warmup", "--api-key", "k",
			"--tls-cert", certFile, "--tls-key", keyFile}, strings.NewReader(""), stdoutW, &stderr)
		stdoutW.Close()
	}()
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	require.NoError(t, err, stderr.String())
	go func() { _, _ = io.Copy(io.Discard, stdoutR) }()
	m := regexp.MustCompile(`on (https://127\.0\.0\.1:\d+), 1 API key`).FindStringSubmatch(line)
	require.NotNil(t, m, line)

	pool := x509.NewCertPool()
	pool.AddCert(must(x509.ParseCertificate(der)))
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	c := &systemone.Client{BaseURL: m[1], APIKey: "k", HTTP: hc}
	resp, err := c.Ask(ctx, &systemone.Request{Model: "jev-latest", State: "I was charged twice.",
		Questions: []systemone.Named{{Name: "billing", Question: gojev.Noul{Instructions: "Is this about billing?"}}}})
	require.NoError(t, err)
	assert.Len(t, resp.Answers, 1)
	_, err = http.Get(m[1] + "/healthz") // not trusting the certificate
	assert.Error(t, err)
	cancel()
	select {
	case c := <-code:
		assert.Equal(t, 0, c, stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatal("jev serve did not stop")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
