package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/systemone"
)

const serveSynopsis = `Usage: jev serve [-m MODEL.gguf] [--host ADDR] [--port N] [--api-key KEYS] [flags]

Serves TypeSafe's System One API from one model in this process, for the programs and SDKs that
ask typed questions (typesafe-sdk, jev-eval, jevkit's tools such as jev-grep, jev-lite: each
one's variables are in docs/typed-questions.md):
  POST /v1/systemone   named questions about one state: choice (one of named criteria),
                       score (a level of an ordered rubric) and noul (a yes/no question)
  GET  /v1/models      the model, under its file name, jev-latest and jev-<version> aliases
  GET  /metrics        Prometheus metrics: requests, questions, prompts, queue, decode time
  GET  /healthz        200 while the process serves (liveness)
  GET  /readyz         200 when it takes new requests; 503 while draining or overloaded
A choice or score question is a row of the direct contract (direct-options-v1: the state is
the evidence, the instructions the criterion, the criteria, or the levels "0" … "n−1", the
options); a noul question has its own prompt (noul-v1: the seed's yes/no system text, read as
p_yes). Every answer carries its prompt_version and prompt_sha256. Concurrent requests share
the Decider's batching: their prompts are decoded together, shared prefixes once.

Keys: with --api-key (or $GOJEV_API_KEYS) every request but /healthz and /readyz needs
"Authorization: Bearer KEY". With none, the server listens on 127.0.0.1 only and answers only
requests addressed to a loopback name (Host localhost, a .localhost name, 127.0.0.1 or [::1]: a
guard against DNS rebinding) that came through no proxy (behind a proxy, give it keys). A browser page of another origin is refused (403) unless --allowed-origins names
it. Bodies must be JSON (415), may come zstd- or gzip-compressed; --max-body applies after
decompressing.

Load: before it serves, the server decodes a few small requests (a choice and a noul) to measure
its decode rate.
A request is admitted when the work admitted before it, at that rate, leaves it time to finish
within its deadline (--timeout, or the client's X-Request-Timeout if shorter); otherwise it
gets 429 at once, with Retry-After saying when it would be admitted. An idle server admits
any request it can take; one that needs more prompts than --max-in-flight is a 422.

Stopping: SIGTERM or Ctrl-C turns /readyz to 503 and answers new requests 503, lets every
accepted request finish (each up to its own deadline), then closes and exits 0. A second signal
stops at once (exit 1).

  jev serve --port 8080 &
  TYPESAFE_BASE_URL=http://127.0.0.1:8080 TYPESAFE_API_KEY=any python3 app.py`

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("serve")
	mf := modelFlags{serving: true}
	mf.register(fs)
	mf.registerDecoding(fs)
	var host, debiasName, priorFile, origins, aliases, tlsCert, tlsKey, reading, questionsPath string
	var port, maxInFlight, maxQuestions int
	var maxBody int64
	var timeout, shutdown time.Duration
	var noWarmup bool
	cli.String(fs, &host, "host", "", "`address` to listen on (default 127.0.0.1; another address needs --api-key)")
	cli.Int(fs, &port, "port", 8080, "TCP `port` to listen on (0: any free port, printed at start)")
	cli.String(fs, &tlsCert, "tls-cert", "", "serve HTTPS with this PEM certificate `file` (with --tls-key); without them keys travel in clear text, so serve other machines through a TLS proxy (docs/typed-questions.md)")
	cli.String(fs, &tlsKey, "tls-key", "", "the PEM private key `file` of --tls-cert")
	cli.String(fs, &origins, "allowed-origins", "", "browser `origins` that may call the server, comma-separated (https://app.example.com, or * for any): they get CORS headers; any other Origin is refused with 403")
	cli.String(fs, &aliases, "model-alias", "", "more model `names` requests may ask for, comma-separated (jev-latest and any jev-<version> are always answered; answers name the model file)")
	cli.String(fs, &debiasName, "debias", "", "bias `method` for choice and score questions: pride, with --prior FILE (estimated beforehand by jev decide --debias pride --prior FILE --prior-only on rows like the questions)")
	cli.String(fs, &priorFile, "prior", "", "PriDe's prior `file` for --debias pride")
	scoreReadingFlag(fs, &reading)
	cli.String(fs, &questionsPath, "calibration", "", "a `path`: a profile of questions, or a folder of them (*.json), fitted by jev calibrate on typed rows' labelled records; an answer to a question one holds (the same type, instructions and criteria) is calibrated by its own map, any other as without it (the shipped band for 2-4 options, else \"uncalibrated\")")
	cli.Int64(fs, &maxBody, "max-body", systemone.DefaultMaxBodyBytes, "largest request body in `bytes`, after decompressing (larger: 413)")
	cli.Int(fs, &maxQuestions, "max-questions", systemone.DefaultMaxQuestions, "most `questions` in one request (more: 422); at most --max-in-flight")
	cli.Int(fs, &maxInFlight, "max-in-flight", systemone.DefaultMaxInFlight, "most `prompts` admitted at once over every request (a question is one prompt, or more: a choice of more than 16 criteria, --permute); past it 429 with Retry-After, and a request needing more alone is a 422")
	cli.Duration(fs, &timeout, "timeout", systemone.DefaultTimeout, "longest a request may take from arrival to answer (a client's shorter X-Request-Timeout wins): a request the queue would keep past it gets 429 at once; one admitted that runs past it, 503")
	cli.Duration(fs, &shutdown, "shutdown-timeout", 0, "longest the drain after SIGTERM may take (default: --timeout plus 10 s, so that every accepted request ends; shorter than --timeout is refused)")
	cli.Bool(fs, &noWarmup, "no-warmup", "do not decode a warm-up request before listening (admission then has no measured rate until the first requests are answered)")
	if err := cli.Parse(fs, args, stderr, serveSynopsis); err != nil {
		return err
	}
	keys := splitList(cmp.Or(mf.apiKey, envVar("GOJEV_API_KEYS", "JEV_API_KEY")))
	switch {
	case host == "":
		host = "127.0.0.1"
	case len(keys) == 0 && !loopback(host):
		return cli.Usage(fmt.Errorf("--host %s: a server reachable from other machines needs --api-key (or $GOJEV_API_KEYS); without keys it listens on 127.0.0.1 only", host))
	}
	switch {
	case timeout <= 0:
		return cli.Usage(fmt.Errorf("--timeout %s: a request's time must be positive", timeout))
	case shutdown != 0 && shutdown < timeout:
		return cli.Usage(fmt.Errorf("--shutdown-timeout %s is shorter than --timeout %s: the drain would cut accepted requests short (lower --timeout instead)", shutdown, timeout))
	case (tlsCert == "") != (tlsKey == ""):
		return cli.Usage(errors.New("--tls-cert and --tls-key go together"))
	}
	if shutdown == 0 {
		shutdown = timeout + 10*time.Second
	}
	if tlsCert != "" {
		if _, err := tls.LoadX509KeyPair(tlsCert, tlsKey); err != nil {
			return cli.Usage(fmt.Errorf("--tls-cert/--tls-key: %w", err))
		}
	}
	r, err := scoreReading(reading)
	if err != nil {
		return err
	}
	opts := gojev.Options{ScoreReading: r}
	if questionsPath != "" {
		if opts.QuestionCalibration, err = calibrate.LoadQuestions(questionsPath); err != nil {
			return cli.Usage(fmt.Errorf("--calibration: %w", err))
		}
	}
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
	fmt.Fprintln(stderr, "jev serve: loading the model ...")
	d, err := mf.open(ctx, stderr, opts)
	if err != nil {
		return err
	}
	defer d.Close()
	// A prior and profiles are the model's own: one of another model file is refused.
	if m := d.Check().Model; m != nil && (opts.Prior != nil || opts.QuestionCalibration != nil) {
		id, err := gojev.ModelIdentity(m.Path, m.Name)
		if err != nil {
			return err
		}
		if p := opts.Prior; p != nil {
			if err := p.Check(id, d.Check().PromptVersion); err != nil {
				return cli.Usage(fmt.Errorf("--prior %s: %w", priorFile, err))
			}
		}
		if p := opts.QuestionCalibration; p != nil {
			if err := p.Check(id, d.Check().PromptVersion); err != nil {
				return cli.Usage(fmt.Errorf("--calibration %s: %w", questionsPath, err))
			}
		}
	}
	if p := opts.QuestionCalibration; p != nil {
		fmt.Fprintf(stderr, "jev serve: %d question(s) calibrated by their own maps (--calibration %s)\n", len(p.Scorings), questionsPath)
	}
	model := servedModel(d, mf)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	h, err := systemone.NewHandler(systemone.Config{Decider: d, Model: model, Aliases: splitList(aliases), APIKeys: keys,
		AllowedOrigins: splitList(origins), MaxBodyBytes: maxBody, MaxQuestions: maxQuestions, MaxInFlight: maxInFlight,
		Timeout: timeout, Logger: logger})
	if err != nil {
		return cli.Usage(fmt.Errorf("%w (flags --max-questions, --max-in-flight, --allowed-origins)", err))
	}
	// Bind first: a port in use is said before any work; connections wait in the backlog
	// while the warm-up runs.
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	defer ln.Close()
	if !noWarmup {
		fmt.Fprintln(stderr, "jev serve: warming up (a few small requests, to measure the decode rate admission estimates waits from) ...")
		t0 := time.Now()
		if err := h.Warmup(ctx); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		fmt.Fprintf(stderr, "jev serve: warmed up in %.1f s\n", time.Since(t0).Seconds())
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		WriteTimeout: h.Config().Timeout + 30*time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	auth := "any key (no --api-key): loopback callers only"
	if len(keys) > 0 {
		auth = fmt.Sprintf("%d API key(s)", len(keys))
	}
	scheme := "http"
	if tlsCert != "" {
		scheme = "https"
	} else if !loopback(host) {
		fmt.Fprintf(stderr, "jev serve: warning: --host %s without --tls-cert: API keys and answers cross the network in clear text; serve it behind a TLS proxy (docs/typed-questions.md)\n", host)
	}
	fmt.Fprintf(stdout, "jev serve: %s (%s) on %s://%s, %s\n", model.Name, d.Check().PromptVersion, scheme, ln.Addr(), auth)
	errc := make(chan error, 1)
	go func() {
		if tlsCert != "" {
			errc <- srv.ServeTLS(ln, tlsCert, tlsKey)
			return
		}
		errc <- srv.Serve(ln)
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Draining: new requests get 503 (and /readyz 503, so that a load balancer moves on) while
	// the accepted ones end, each by its deadline; then the listener closes.
	again := make(chan os.Signal, 1)
	signal.Notify(again, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(again)
	h.Drain()
	fmt.Fprintf(stderr, "jev serve: draining: %d request(s) in flight finish, each by its deadline; new ones get 503 (a second signal stops at once)\n", h.Requests())
	deadline := time.NewTimer(shutdown)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for h.Requests() > 0 {
		select {
		case <-tick.C:
		case <-deadline.C:
			n := h.Requests()
			_ = srv.Close()
			return fmt.Errorf("draining: %d request(s) still in flight after --shutdown-timeout %s", n, shutdown)
		case <-again:
			n, p := h.Requests(), h.InFlight()
			_ = srv.Close()
			return fmt.Errorf("stopped at once by a second signal: %d request(s) in flight dropped (%d prompts)", n, p)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	fmt.Fprintln(stderr, "jev serve: stopped")
	return nil
}

// splitList splits a comma-separated flag or variable, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, k := range strings.Split(s, ",") {
		if k = strings.TrimSpace(k); k != "" {
			out = append(out, k)
		}
	}
	return out
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
