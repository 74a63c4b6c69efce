package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/systemone"
)

// jev serve as an operator runs it: it prints where it listens, answers the API with the key
// it was given, and on SIGTERM lets the request in flight finish before it exits 0.
func TestServeShutsDownGracefully(t *testing.T) {
	bin := buildJev(t)
	cmd := exec.Command(bin, "serve", "-m", testenv.SmallModel(t), "-t", "2", "--port", "0", "--api-key", "k1,k2")
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "stderr: %s", stderr.String())
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+), 2 API key`).FindStringSubmatch(line)
	require.NotNil(t, m, line)
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	c := &systemone.Client{BaseURL: m[1], APIKey: "k2"}
	models, err := c.Models(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "jev-latest", models[1].Name)
	_, err = (&systemone.Client{BaseURL: m[1]}).Models(context.Background())
	var ae *systemone.APIError
	require.ErrorAs(t, err, &ae, "no key: refused")
	assert.Equal(t, http.StatusUnauthorized, ae.Status)

	// Several questions in flight when SIGTERM comes: the request still gets its answers.
	req := &systemone.Request{Model: "jev-latest", State: strings.Repeat("I was charged twice for one coffee. ", 20)}
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		req.Questions = append(req.Questions, systemone.Named{Name: n, Question: gojev.Noul{Instructions: "Is this about billing (" + n + ")?"}})
	}
	var wg sync.WaitGroup
	var resp *systemone.Response
	var askErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		resp, askErr = c.Ask(context.Background(), req)
	}()
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	wg.Wait()
	require.NoError(t, askErr, "stderr: %s", stderr.String())
	assert.Len(t, resp.Answers, 6)
	require.NoError(t, cmd.Wait(), "exits 0 after the request in flight: %s", stderr.String())
	assert.Contains(t, stderr.String(), "jev serve: stopping")
	assert.Contains(t, stderr.String(), "status=200")
	assert.Contains(t, stderr.String(), "questions=6")
}

// Without keys the server must stay on the loopback interface.
func TestServeRefusesAnOpenPublicAddress(t *testing.T) {
	var stdout, stderr strings.Builder
	code := run(context.Background(), []string{"serve", "--host", "0.0.0.0"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "needs --api-key")
	code = run(context.Background(), []string{"serve", "--debias", "pride"}, strings.NewReader(""), &stdout, &stderr)
	assert.Equal(t, 2, code)
	assert.Contains(t, stderr.String(), "needs --prior FILE")
}
