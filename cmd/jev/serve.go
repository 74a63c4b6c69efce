package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/systemone"
)

const serveSynopsis = `Usage: jev serve [-m MODEL.gguf] [--host ADDR] [--port N] [--api-key KEYS] [flags]

Serves TypeSafe's System One API from one model in this process, for the programs and SDKs that
ask typed questions (typesafe-sdk's TypeSafeClient with TYPESAFE_BASE_URL set to this server):
  POST /v1/systemone   named questions about one state: choice (one of named criteria),
                       score (a level of an ordered rubric) and noul (a yes/no question)
  GET  /v1/models      the model, under its file name and under jev-latest
  GET  /healthz        200 while the server runs
A choice or score question is a row of the direct contract (direct-options-v1: the state is
the evidence, the instructions the criterion, the criteria, or the levels "0" … "n−1", the
options); a noul question has its own prompt (noul-v1: the seed's yes/no system text, read as
p_yes). Every answer carries its prompt_version and prompt_sha256; confidence is the
normalised margin of the top probability over uniform. Concurrent requests share the
Decider's batching: their prompts are decoded together, shared prefixes once.

Keys: with --api-key (or $JEV_API_KEY) every request needs "Authorization: Bearer KEY"; with
none, every request is accepted and the server listens on 127.0.0.1 only. Bodies may come
zstd- or gzip-compressed; --max-body applies after decompressing. A request that would put
more than --max-in-flight questions in flight gets 429 with Retry-After, never a queue without
bound; a client that goes away cancels its request's work. SIGTERM or Ctrl-C stops accepting,
lets the requests in flight finish (up to --shutdown-timeout), and exits.

  jev serve --port 8080 &
  TYPESAFE_BASE_URL=http://127.0.0.1:8080 TYPESAFE_API_KEY=any python3 app.py`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("serve")
	mf := modelFlags{serving: true}
	mf.register(fs)
	mf.registerDecoding(fs)
	var host, debiasName, priorFile string
	var port, maxInFlight, maxQuestions int
	var maxBody int64
	var timeout, shutdown time.Duration
	cli.String(fs, &host, "host", "", "`address` to listen on (default 127.0.0.1; another address needs --api-key)")
	cli.Int(fs, &port, "port", 8080, "TCP `port` to listen on (0: any free port, printed at start)")
	cli.String(fs, &debiasName, "debias", "", "bias `method` for choice and score questions: pride, with --prior FILE (estimated beforehand by jev decide --debias pride --prior FILE --prior-only on rows like the questions)")
	cli.String(fs, &priorFile, "prior", "", "PriDe's prior `file` for --debias pride")
	cli.Int64(fs, &maxBody, "max-body", systemone.DefaultMaxBodyBytes, "largest request body in `bytes`, after decompressing (larger: 413)")
	cli.Int(fs, &maxQuestions, "max-questions", systemone.DefaultMaxQuestions, "most `questions` in one request (more: 422)")
	cli.Int(fs, &maxInFlight, "max-in-flight", systemone.DefaultMaxInFlight, "most `questions` decided at once over every request (more: 429 with Retry-After)")
	cli.Duration(fs, &timeout, "timeout", systemone.DefaultTimeout, "longest a request's decisions may take (past it: 503 with Retry-After)")
	cli.Duration(fs, &shutdown, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for the requests in flight")
	if err := cli.Parse(fs, args, stderr, serveSynopsis); err != nil {
		return err
	}
	var keys []string
	for _, k := range strings.Split(cmp.Or(mf.apiKey, os.Getenv("JEV_API_KEY")), ",") {
		if k = strings.TrimSpace(k); k != "" {
			keys = append(keys, k)
		}
	}
	switch {
	case host == "":
		host = "127.0.0.1"
	case len(keys) == 0 && !loopback(host):
		return cli.Usage(fmt.Errorf("--host %s: a server reachable from other machines needs --api-key (or $JEV_API_KEY); without keys it listens on 127.0.0.1 only", host))
	}
	opts := gojev.Options{}
	switch debiasName {
	case "":
		if priorFile != "" {
			return cli.Usage(errors.New("--prior FILE holds PriDe's prior: use it with --debias pride"))
		}
	case "pride":
		if priorFile == "" {
			return cli.Usage(errors.New("--debias pride needs --prior FILE: a server cannot estimate a prior from its requests' sample (jev decide --debias pride --prior FILE --prior-only -i ROWS estimates one)"))
		}
		p, err := debias.LoadPrior(priorFile)
		if err != nil {
			return cli.Usage(fmt.Errorf("--prior: %w", err))
		}
		opts.Debias, opts.Prior = debias.PriDe, p
	default:
		return cli.Usage(fmt.Errorf("--debias %q: jev serve takes pride (with --prior FILE)", debiasName))
	}
	d, err := mf.open(ctx, stderr, opts)
	if err != nil {
		return err
	}
	defer d.Close()
	if p := opts.Prior; p != nil {
		if m := d.Check().Model; m != nil {
			id, err := gojev.ModelIdentity(m.Path, m.Name)
			if err != nil {
				return err
			}
			if err := p.Check(id, d.Check().PromptVersion); err != nil {
				return cli.Usage(fmt.Errorf("--prior %s: %w", priorFile, err))
			}
		}
	}
	model := servedModel(d, mf)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h := systemone.NewHandler(systemone.Config{Decider: d, Model: model, APIKeys: keys, MaxBodyBytes: maxBody,
		MaxQuestions: maxQuestions, MaxInFlight: maxInFlight, Timeout: timeout, Logger: logger})
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: timeout + time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	auth := "any key (no --api-key)"
	if len(keys) > 0 {
		auth = fmt.Sprintf("%d API key(s)", len(keys))
	}
	fmt.Fprintf(stdout, "jev serve: %s (%s) on http://%s, %s\n", model.Name, d.Check().PromptVersion, ln.Addr(), auth)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "jev serve: stopping: the requests in flight finish")
	sctx, cancel := context.WithTimeout(context.Background(), shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping: %w", err)
	}
	fmt.Fprintln(stderr, "jev serve: stopped")
	return nil
}

// servedModel is what GET /v1/models lists: the model file's name, its description and
// modification date (over --runtime: the server's URL and today).
func servedModel(d *gojev.Decider, mf modelFlags) systemone.Model {
	c := d.Check()
	m := systemone.Model{Name: c.Backend, Description: "gojev over " + c.Backend, ReleaseDate: time.Now().UTC().Format(time.DateOnly)}
	if info := c.Model; info != nil {
		m.Name = filepath.Base(info.Path)
		m.Description = strings.TrimSpace(info.Name + ", " + info.Desc + ", decided in-process by gojev (" + c.PromptVersion + ", noul-v1)")
		if st, err := os.Stat(info.Path); err == nil {
			m.ReleaseDate = st.ModTime().UTC().Format(time.DateOnly)
		}
	}
	return m
}

// loopback reports whether host names the loopback interface only.
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
