// Package llamaserver starts and stops a llama-server built from the pinned llama.cpp (make
// server) on 127.0.0.1, for the parity tests, jev parity and jev bench.
package llamaserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrNotFound: no llama-server binary was found (see Find).
var ErrNotFound = errors.New("llamaserver: no llama-server binary (run `make server`, or set JEV_LLAMA_SERVER)")

// Find returns the llama-server binary: $JEV_LLAMA_SERVER, else third_party/native/bin/ under
// repoRoot (when not ""), else beside the running executable's ../third_party/native/bin/,
// else llama-server on $PATH.
func Find(repoRoot string) (string, error) {
	if p := os.Getenv("JEV_LLAMA_SERVER"); p != "" {
		return p, nil
	}
	var dirs []string
	if repoRoot != "" {
		dirs = append(dirs, filepath.Join(repoRoot, "third_party", "native", "bin"))
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "..", "third_party", "native", "bin"))
	}
	for _, d := range dirs {
		p := filepath.Join(d, "llama-server")
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	if p, err := exec.LookPath("llama-server"); err == nil {
		return p, nil
	}
	return "", ErrNotFound
}

// FindBench returns the llama-bench binary that make server builds beside llama-server (Find).
func FindBench(repoRoot string) (string, error) {
	server, err := Find(repoRoot)
	if err != nil {
		return "", err
	}
	p := strings.TrimSuffix(server, "llama-server") + "llama-bench"
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no llama-bench beside %s (run `make server`): %w", server, err)
	}
	return p, nil
}

// RepoRoot finds the gojev checkout a program was built in, for Find and the llama.cpp tree
// (third_party/): the running executable's ../ when it holds third_party/ (bin/jev), else the
// nearest folder above the working directory that holds third_party/llama.cpp.pin, else the
// working directory.
func RepoRoot() string {
	if exe, err := os.Executable(); err == nil {
		root := filepath.Dir(filepath.Dir(exe))
		if _, err := os.Stat(filepath.Join(root, "third_party")); err == nil {
			return root
		}
	}
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "third_party", "llama.cpp.pin")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return wd
		}
	}
}

// Options for Start.
type Options struct {
	Bin     string // the llama-server binary (Find)
	Model   string // the GGUF model
	Threads int    // -t (default 2)
	NCtx    int    // -c (default 4096)
	// Args are extra arguments. Start always passes --host 127.0.0.1 --port P -np 1 and
	// -fa off: flash attention off, as gojev decodes, so the logits can be compared.
	Args []string
	// Timeout bounds the wait for /health (default 2 minutes).
	Timeout time.Duration
	// Passive makes the server's threads sleep between requests instead of spinning
	// (OMP_WAIT_POLICY=PASSIVE, --poll 0), for tests that decode in-process between server
	// calls on the same cores. Leave it off to measure the server's own speed.
	Passive bool
}

// Server is a running llama-server.
type Server struct {
	URL  string // http://127.0.0.1:PORT
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
	once sync.Once
}

// Start runs llama-server on a free loopback port and waits until GET /health answers 200.
// The caller must Close it. Errors: the process exited (its log tail is in the error), or the
// timeout passed.
func Start(ctx context.Context, opts Options) (*Server, error) {
	if opts.Threads <= 0 {
		opts.Threads = 2
	}
	if opts.NCtx <= 0 {
		opts.NCtx = 4096
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Minute
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"-m", opts.Model, "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"-t", strconv.Itoa(opts.Threads), "-tb", strconv.Itoa(opts.Threads), "-c", strconv.Itoa(opts.NCtx),
		"-np", "1", "-fa", "off", "--no-webui"}
	if opts.Passive {
		args = append(args, "--poll", "0")
	}
	args = append(args, opts.Args...)
	cmd := exec.Command(opts.Bin, args...)
	if opts.Passive {
		cmd.Env = append(os.Environ(), "OMP_WAIT_POLICY=PASSIVE")
	}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("llamaserver: starting %s: %w", opts.Bin, err)
	}
	s := &Server{URL: fmt.Sprintf("http://127.0.0.1:%d", port), cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(opts.Timeout)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/health", nil)
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("llamaserver: %s exited before it was ready: %s", opts.Bin, s.LogTail(2000))
		case <-ctx.Done():
			s.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Close()
			return nil, fmt.Errorf("llamaserver: not healthy after %v: %s", opts.Timeout, s.LogTail(2000))
		}
	}
}

// Close stops the server (SIGKILL; it holds nothing worth a graceful stop) and waits for it.
// It is idempotent.
func (s *Server) Close() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
	})
	return nil
}

// LogTail returns the last n bytes of the server's output.
func (s *Server) LogTail(n int) string {
	b := s.log.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("llamaserver: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.b.Bytes())
}
