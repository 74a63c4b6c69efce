package systemone

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/pyjson"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20 // 1 MiB, after decompressing
	DefaultMaxQuestions = 64      // per request
	DefaultMaxInFlight  = 1024    // prompts admitted at once, over every request
	DefaultTimeout      = 2 * time.Minute
)

// TimeoutHeader is the request header a client may state its own deadline in, in seconds
// ("X-Request-Timeout: 15"): the server admits the request only if it expects to answer
// within it, and stops its work past it. The shorter of it and Config.Timeout applies.
const TimeoutHeader = "X-Request-Timeout"

// ErrConfig: a Config's limits contradict each other (NewHandler).
var ErrConfig = errors.New("systemone: contradictory configuration")

// Config configures a Handler.
type Config struct {
	// Decider decides every request's questions (one model); the handler does not close it.
	Decider *gojev.Decider
	// Model is the model answers name (Response.Model: what really answered) and GET
	// /v1/models lists first.
	Model Model
	// Aliases are more model names requests may ask for, listed in GET /v1/models as aliases
	// of Model, beside those always answered: DefaultModel and the jev-<version> names System
	// One clients send by default (VersionAliases, and any name of that form).
	Aliases []string
	// APIKeys are the bearer keys accepted ("Authorization: Bearer <key>", the scheme in any
	// case). Empty: every request is accepted with or without a key, but only when its Host is
	// a loopback name (localhost, 127.0.0.1, [::1]): serve it on a loopback address only.
	APIKeys []string
	// AllowedOrigins are the browser origins ("https://app.example.com", or "*") that may call
	// the server besides its own: a request whose Origin header names another is refused with
	// 403, and an allowed one gets CORS headers (preflights answered).
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body after decompressing (0: DefaultMaxBodyBytes); a
	// larger one is refused with 413.
	MaxBodyBytes int64
	// MaxQuestions bounds the questions of one request (0: DefaultMaxQuestions); more is a 422.
	MaxQuestions int
	// MaxInFlight bounds the prompts admitted at once over every request (0:
	// DefaultMaxInFlight; gojev.Decider.Prompts counts a question's). A request that would
	// pass it is refused at once with 429 and Retry-After; one that alone needs more is a 422.
	MaxInFlight int
	// Timeout bounds one request, from its arrival to its answer (0: DefaultTimeout; a shorter
	// X-Request-Timeout from the client wins). A request that the admitted work ahead of it
	// would keep past it is refused at once with 429 and Retry-After; one admitted that still
	// runs past it fails with 503, and its work is dropped.
	Timeout time.Duration
	// Logger logs one line per request (nil: slog.Default()).
	Logger *slog.Logger
}

// withDefaults is the configuration with its zero limits at their defaults.
func (c Config) withDefaults() Config {
	if c.MaxBodyBytes <= 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxQuestions <= 0 {
		c.MaxQuestions = DefaultMaxQuestions
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = DefaultMaxInFlight
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Handler serves TypeSafe's System One API over a Decider:
//
//	POST /v1/systemone  named typed questions about a state (behind the keys)
//	GET  /v1/models     the model and the names it answers to (behind the keys)
//	GET  /metrics       Prometheus metrics (behind the keys)
//	GET  /healthz       200 while the process serves (liveness)
//	GET  /readyz        200 when it takes new requests; 503 while draining or overloaded
//
// Bodies may come compressed (Content-Encoding zstd or gzip, as the official SDK sends bodies of
// 1 KiB and more) and must be JSON (Content-Type application/json, else 415); the size limit
// applies after decompressing. Every error is JSON: 422 {"detail": [{"loc", "msg", "type"}]} for
// a request the API refuses (a validation error is never a 5xx, and every question is checked,
// its prompt's length against n_ctx included, before any is queued), and {"detail": msg}
// otherwise: 401 for a wrong key, 403 for a foreign Host or Origin, 404 for an unknown model or
// path, 405, 413 for a body too large, 415, 429 when the work admitted would not let the
// request finish within its deadline (or pass MaxInFlight prompts), 503 while draining or past
// the deadline. 429 and 503 carry Retry-After (whole seconds) and Retry-After-Ms, computed from
// the measured decode rate (admission). A client that goes away cancels its request's work,
// so a retried request is not decided twice at once. Every response carries the request's id
// (X-Request-Id, and X-TypeSafe-Request-Id as TypeSafe's API does): the client's X-Request-Id
// when it sends one.
//
// A Handler is safe for concurrent use.
type Handler struct {
	cfg      Config
	local    *Local
	adm      *admission
	met      *metrics
	draining atomic.Bool
	// routes maps a path to its methods' handlers.
	routes map[string]map[string]http.HandlerFunc
}

// NewHandler returns the handler of cfg, its zero fields at their defaults. Errors wrap
// ErrConfig for limits that contradict each other (a request of MaxQuestions questions could
// never be admitted under MaxInFlight prompts), or name a missing Decider.
func NewHandler(cfg Config) (*Handler, error) {
	cfg = cfg.withDefaults()
	switch {
	case cfg.Decider == nil:
		return nil, fmt.Errorf("%w: no Decider", ErrConfig)
	case cfg.MaxQuestions > cfg.MaxInFlight:
		return nil, fmt.Errorf("%w: at most %d questions a request, but %d prompts in flight: a full request could never be admitted (every question is at least one prompt)", ErrConfig, cfg.MaxQuestions, cfg.MaxInFlight)
	}
	for _, o := range cfg.AllowedOrigins {
		if o != "*" && !strings.Contains(o, "://") {
			return nil, fmt.Errorf("%w: allowed origin %q is not scheme://host[:port] or *", ErrConfig, o)
		}
	}
	h := &Handler{cfg: cfg, local: &Local{Decider: cfg.Decider, Model: cfg.Model.Name, Aliases: cfg.Aliases},
		adm: newAdmission(cfg.MaxInFlight, cfg.Decider.Stats())}
	h.met = newMetrics(h)
	h.routes = map[string]map[string]http.HandlerFunc{
		"/v1/systemone": {http.MethodPost: h.auth(h.systemOne)},
		"/v1/models":    {http.MethodGet: h.auth(h.models)},
		"/metrics":      {http.MethodGet: h.auth(h.met.handler().ServeHTTP)},
		"/healthz":      {http.MethodGet: h.healthz},
		"/readyz":       {http.MethodGet: h.readyz},
	}
	return h, nil
}

// Config returns the handler's configuration, its defaults filled in (jev serve sizes its
// server's timeouts from Timeout).
func (h *Handler) Config() Config { return h.cfg }

// ServeHTTP checks who calls (Host, Origin), routes the request, and logs and counts it.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := requestID(r)
	w.Header().Set("X-Request-Id", id)
	w.Header().Set("X-TypeSafe-Request-Id", id)
	rec := &statusWriter{ResponseWriter: w}
	info := &requestInfo{start: start}
	h.route(rec, r.WithContext(context.WithValue(r.Context(), infoKey{}, info)))
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	took := time.Since(start)
	h.met.observe(endpointOf(r.URL.Path), rec.status, took)
	attrs := []any{"id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"ms", float64(took.Microseconds()) / 1000, "remote", r.RemoteAddr}
	if info.questions > 0 {
		attrs = append(attrs, "questions", info.questions, "prompts", info.prompts, "input_tokens", info.usage.InputTokens)
	}
	if info.retry > 0 {
		attrs = append(attrs, "retry_after_ms", info.retry.Milliseconds())
	}
	if info.err != nil {
		attrs = append(attrs, "error", info.err.Error())
	}
	level := slog.LevelInfo
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		level = slog.LevelDebug // probes every few seconds: not a line each
	}
	h.cfg.Logger.Log(r.Context(), level, "systemone", attrs...)
}

func (h *Handler) route(w http.ResponseWriter, r *http.Request) {
	probe := r.URL.Path == "/healthz" || r.URL.Path == "/readyz"
	if !probe {
		if len(h.cfg.APIKeys) == 0 && !loopbackHost(r.Host) {
			writeDetail(w, http.StatusForbidden, fmt.Sprintf("Host %q is not a loopback name: without API keys this server answers only requests addressed to localhost or a loopback address (a guard against DNS rebinding); start it with --api-key to serve other names", r.Host))
			return
		}
		if hdr := proxied(r); len(h.cfg.APIKeys) == 0 && hdr != "" {
			writeDetail(w, http.StatusForbidden, fmt.Sprintf("the request came through a proxy (%s): without API keys this server answers only callers on this machine; behind a proxy, start it with --api-key", hdr))
			return
		}
		origin := r.Header.Get("Origin")
		if !originAllowed(origin, r.Host, h.cfg.AllowedOrigins) {
			writeDetail(w, http.StatusForbidden, fmt.Sprintf("Origin %q may not call this server: a web page of another site cannot drive the model (start it with --allowed-origins %s to let that page in)", origin, origin))
			return
		}
		if origin != "" && !originAllowed(origin, r.Host, nil) {
			corsHeaders(w, origin)
			if r.Method == http.MethodOptions {
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
	}
	methods, ok := h.routes[r.URL.Path]
	if !ok {
		writeDetail(w, http.StatusNotFound, fmt.Sprintf("not found: %s; the API is POST /v1/systemone (give a client this server's root, its /v1, or that path, as the client asks)", r.URL.Path))
		return
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	fn, ok := methods[method]
	if !ok {
		var allow []string
		for m := range methods {
			allow = append(allow, m)
		}
		slices.Sort(allow)
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeDetail(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: this path takes %s", r.Method, r.URL.Path, strings.Join(allow, ", ")))
		return
	}
	fn(w, r)
}

// InFlight is how many prompts the requests in flight bring (admitted and not yet answered).
func (h *Handler) InFlight() int64 { return int64(h.adm.load().Prompts) }

// Requests is how many requests are in flight (admitted and not yet answered).
func (h *Handler) Requests() int { return h.adm.load().Requests }

// Drain stops admitting requests: new ones get 503 with Retry-After and /readyz answers 503,
// while the requests in flight go on to their answers or their deadlines. jev serve calls it
// on SIGTERM before it stops accepting connections (http.Server.Shutdown), which waits for
// them. It cannot be undone.
func (h *Handler) Drain() { h.draining.Store(true) }

// Warmup decodes small requests before the handler serves: a choice and a noul question, each
// alone, about a long state (untimed: the model's weights are read in), then about a short and a
// long state, one after the other. Admission learns from them the tokens of each kind of
// prompt's template, the tokens a state's bytes make, and the time a prompt and a token take,
// so that the first burst of requests is admitted by measurement rather than by the prompt
// limit alone. A model that cannot answer noul questions is warmed with the choice only; a
// state too long for a small n_ctx is cut. Errors are the Decider's.
func (h *Handler) Warmup(ctx context.Context) error {
	questions := []Named{
		{Name: "team", Question: gojev.Choice{Instructions: "Which team should handle this message?",
			Criteria: []gojev.Criterion{{Name: "billing", Description: "Charges and refunds."}, {Name: "shipping", Description: "Parcels and deliveries."}}}},
		{Name: "billing", Question: gojev.Noul{Instructions: "Is this message about a charge?"}},
	}
	// The two states differ from their first byte, so that the long one's decode after the
	// short one reuses the template's head alone.
	short := map[string]any{"message": "Refund me."}
	long := map[string]any{"message": strings.Repeat("I was charged twice for one order, and the refund I was promised never arrived. ", 4)}
	ask := func(q Named, state any) (warmPoint, error) {
		req := &Request{Model: DefaultModel, State: state, Questions: []Named{q}}
		before := h.cfg.Decider.Stats()
		if _, err := h.local.Ask(ctx, req); err != nil {
			return warmPoint{}, err
		}
		after := h.cfg.Decider.Stats()
		p := h.work(req)[0]
		return warmPoint{kind: p.kind, bytes: p.bytes,
			prompt: float64(after.PromptTokens - before.PromptTokens), decoded: float64(after.DecodedTokens - before.DecodedTokens),
			busy: time.Duration(after.DecodeNS + after.PrepareNS - before.DecodeNS - before.PrepareNS).Seconds()}, nil
	}
	var points []warmPoint
	for i, q := range questions {
		var ve ValidationErrors
		_, err := ask(q, long) // cold
		if errors.As(err, &ve) && ve[0].Type == "context_length_exceeded" {
			long = short // a small n_ctx: one length only (no scale measured)
			_, err = ask(q, long)
		}
		if errors.As(err, &ve) && i == 1 {
			break // no yes/no slots: a choice only
		}
		if err != nil {
			return err
		}
		for _, state := range []any{short, long} {
			p, err := ask(q, state)
			if err != nil {
				return err
			}
			points = append(points, p)
		}
	}
	h.adm.learn(points)
	h.adm.restart(h.cfg.Decider.Stats())
	return nil
}

// requestInfo is what a request's log line says beyond its status.
type requestInfo struct {
	start              time.Time
	questions, prompts int
	usage              Usage
	retry              time.Duration
	err                error
}

type infoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if i, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{start: time.Now()}
}

// auth checks the bearer key when keys are configured.
func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(h.cfg.APIKeys) == 0 {
			next(w, r)
			return
		}
		if key, ok := bearer(r.Header.Get("Authorization")); ok && keyAccepted(key, h.cfg.APIKeys) {
			next(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="systemone"`)
		writeDetail(w, http.StatusUnauthorized, "invalid or missing API key (Authorization: Bearer <key>)")
	}
}

func (h *Handler) models(w http.ResponseWriter, _ *http.Request) {
	list := ModelList{Models: []Model{h.cfg.Model}}
	for _, name := range h.local.names()[1:] {
		alias := h.cfg.Model
		alias.Name, alias.Description = name, "an alias of "+h.cfg.Model.Name+": "+h.cfg.Model.Description
		list.Models = append(list.Models, alias)
	}
	writeJSON(w, http.StatusOK, list)
}

func (h *Handler) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readiness reports whether the handler takes new requests: not while draining, nor while it
// is overloaded: refusing requests for their deadline (in the last overloadFor), or with more
// work admitted than a new request's deadline allows (retry then says when it would not be).
func (h *Handler) readiness() (ok bool, status string, retry time.Duration) {
	if h.draining.Load() {
		return false, "draining", 0
	}
	l := h.adm.load()
	if budget := time.Duration(admitHeadroom * float64(h.cfg.Timeout)); l.Wait > budget || time.Since(l.Refused) < overloadFor {
		return false, "overloaded", max(l.Wait-budget, time.Second)
	}
	return true, "ready", 0
}

// overloadFor is how long after it last refused a request for its deadline the handler says
// it is overloaded (GET /readyz 503), so that a load balancer sends the next ones elsewhere.
const overloadFor = 2 * time.Second

func (h *Handler) readyz(w http.ResponseWriter, _ *http.Request) {
	ok, status, retry := h.readiness()
	l := h.adm.load()
	body := pyjson.Object{{Key: "status", Value: status}, {Key: "requests_in_flight", Value: l.Requests},
		{Key: "prompts_in_flight", Value: l.Prompts}, {Key: "expected_wait_s", Value: math.Round(l.Wait.Seconds()*1000) / 1000}}
	code := http.StatusOK
	if !ok {
		code = http.StatusServiceUnavailable
		setRetryAfter(w, max(retry, time.Second))
	}
	writeJSON(w, code, body)
}

func (h *Handler) systemOne(w http.ResponseWriter, r *http.Request) {
	info := infoOf(r)
	if h.draining.Load() {
		h.met.refused.WithLabelValues("draining").Inc()
		w.Header().Set("Connection", "close")
		h.refuse(w, info, http.StatusServiceUnavailable, 2*time.Second, "the server is shutting down: it finishes the requests it accepted and takes no new one")
		return
	}
	if ct := r.Header.Get("Content-Type"); !jsonContent(ct) {
		writeDetail(w, http.StatusUnsupportedMediaType, fmt.Sprintf("Content-Type %q: the body must be JSON (Content-Type: application/json)", ct))
		return
	}
	deadline := h.cfg.Timeout
	if v := r.Header.Get(TimeoutHeader); v != "" {
		s, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || !(s > 0) || math.IsInf(s, 0) {
			writeDetail(w, http.StatusBadRequest, fmt.Sprintf("%s %q: want a positive number of seconds", TimeoutHeader, v))
			return
		}
		deadline = min(deadline, time.Duration(s*float64(time.Second)))
	}
	body, status, err := h.readBody(w, r)
	if err != nil {
		writeDetail(w, status, err.Error())
		return
	}
	req, err := ParseRequest(body)
	if err == nil && len(req.Questions) > h.cfg.MaxQuestions {
		err = ValidationErrors{{Loc: []any{"body", "questions"}, Msg: fmt.Sprintf("at most %d questions a request on this server, got %d", h.cfg.MaxQuestions, len(req.Questions)), Type: "too_long"}}
	}
	var ve ValidationErrors
	if errors.As(err, &ve) {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": ve})
		return
	}
	if !h.local.serves(req.Model) {
		writeDetail(w, http.StatusNotFound, strings.TrimPrefix(h.local.unknown(req.Model).Error(), "systemone: "))
		return
	}
	parts := h.work(req)
	prompts := 0
	for _, p := range parts {
		prompts += p.prompts
	}
	info.questions, info.prompts = len(req.Questions), prompts
	if prompts > h.cfg.MaxInFlight {
		h.met.refused.WithLabelValues("too_large").Inc()
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": ValidationErrors{{Loc: []any{"body", "questions"},
			Msg: fmt.Sprintf("these questions need %d prompts, and this server decides at most %d at once (--max-in-flight): send them in smaller requests", prompts, h.cfg.MaxInFlight), Type: "too_long"}}})
		return
	}
	deadline -= time.Since(info.start) // the body's arrival counts
	t, reason, retry := h.adm.admit(prompts, parts, h.adm.estimate(parts), deadline)
	if t == nil {
		h.met.refused.WithLabelValues(reason).Inc()
		h.adm.refused()
		msg := fmt.Sprintf("the server is busy: the work admitted ahead of this request would not let it finish within its deadline of %s; retry in %.1f s", deadline.Round(time.Millisecond), retry.Seconds())
		if reason == refusePrompts {
			msg = fmt.Sprintf("the server is busy: %d prompts are admitted at most (--max-in-flight), and this request brings %d; retry in %.1f s", h.cfg.MaxInFlight, prompts, retry.Seconds())
		}
		h.refuse(w, info, http.StatusTooManyRequests, retry, msg)
		return
	}
	var answered bool
	defer func() {
		h.adm.release(t, answered)
		h.adm.observe(h.cfg.Decider.Stats())
	}()
	ctx, cancel := context.WithTimeout(r.Context(), deadline)
	defer cancel()
	call, qs, err := h.local.begin(ctx, req)
	var answers map[string]*gojev.Answer
	if err == nil {
		_, distinct := call.Tokens()
		h.adm.prepared(t, distinct)
		answers, err = call.Wait(ctx)
		err = validation(err, qs)
	}
	info.err, answered = err, err == nil
	switch {
	case err == nil:
		resp := ResponseOf(h.local.Model, req.Questions, answers)
		info.usage = resp.Usage
		for _, a := range answers {
			h.met.questions.WithLabelValues(a.Type).Inc()
			if a.Result != nil {
				h.met.queueWait.Observe(a.Result.Stats.QueueMS / 1000)
			}
		}
		writeJSON(w, http.StatusOK, resp)
	case errors.As(err, &ve):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": ve})
	case r.Context().Err() != nil:
		// The client went away: its work was dropped, and nobody reads an answer.
		writeDetail(w, 499, "client closed the request")
	case errors.Is(err, context.DeadlineExceeded):
		h.refuse(w, info, http.StatusServiceUnavailable, max(h.adm.load().Wait, minRetry),
			fmt.Sprintf("the request did not finish within its deadline of %s", deadline.Round(time.Millisecond)))
	case errors.Is(err, gojev.ErrClosed):
		h.refuse(w, info, http.StatusServiceUnavailable, 2*time.Second, "the server is shutting down")
	default:
		writeDetail(w, http.StatusInternalServerError, err.Error())
	}
}

// work is the prompts a request's questions need (gojev.Decider.Prompts) and the bytes of
// their user messages (gojev.Decider.UserMessages), by kind of prompt: what the messages of one
// kind share from their start (the state, the start of similar questions) once, as their
// tokens are decoded; a question's prompts beyond its messages (permutations, a knockout's
// final pass) at its messages' mean length. admission.estimate turns them into tokens.
func (h *Handler) work(req *Request) []part {
	d := h.cfg.Decider
	var parts []part
	msgs := map[string][]string{}
	for _, q := range req.Questions {
		kind := kindRow
		if q.Type() == "noul" {
			kind = kindNoul
		}
		i := slices.IndexFunc(parts, func(p part) bool { return p.kind == kind })
		if i < 0 {
			parts, i = append(parts, part{kind: kind}), len(parts)
		}
		n := d.Prompts(q.Question)
		parts[i].prompts += n
		m, err := d.UserMessages(req.State, q.Question)
		if err != nil || len(m) == 0 { // refused when prepared; until then, its JSON's bytes
			qj, _ := gojev.QuestionJSON(q.Question)
			b, _ := json.Marshal(pyjson.Object{{Key: "state", Value: req.State}, {Key: "question", Value: qj}})
			m = []string{string(b)}
		}
		msgs[kind] = append(msgs[kind], m...)
		if extra := n - len(m); extra > 0 {
			total := 0
			for _, s := range m {
				total += len(s)
			}
			parts[i].bytes += float64(extra*total) / float64(len(m))
		}
	}
	for i, p := range parts {
		parts[i].bytes += distinctBytes(msgs[p.kind])
	}
	return parts
}

// distinctBytes is the bytes of texts with a prefix some share counted once: their trie's
// size.
func distinctBytes(texts []string) float64 {
	slices.Sort(texts)
	n, prev := 0, ""
	for _, t := range texts {
		common := 0
		for common < min(len(t), len(prev)) && t[common] == prev[common] {
			common++
		}
		n, prev = n+len(t)-common, t
	}
	return float64(n)
}

// refuse answers status (429 or 503) with Retry-After.
func (h *Handler) refuse(w http.ResponseWriter, info *requestInfo, status int, retry time.Duration, msg string) {
	info.retry = retry
	setRetryAfter(w, retry)
	writeDetail(w, status, msg)
}

// setRetryAfter sets Retry-After (whole seconds, RFC 9110) and Retry-After-Ms (the official
// client reads it first).
func setRetryAfter(w http.ResponseWriter, d time.Duration) {
	s, ms := retryAfter(d)
	w.Header().Set("Retry-After", s)
	w.Header().Set("Retry-After-Ms", ms)
}

// readBody reads a request body within MaxBodyBytes, decompressing zstd and gzip bodies.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, int, error) {
	limit := h.cfg.MaxBodyBytes
	raw := http.MaxBytesReader(w, r.Body, limit)
	var body io.Reader = raw
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "zstd":
		zr, err := zstd.NewReader(raw, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)+1<<16), zstd.WithDecoderMaxWindow(8<<20))
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("zstd body: %w", err)
		}
		defer zr.Close()
		body = zr
	case "gzip":
		zr, err := gzip.NewReader(raw)
		if err != nil {
			return nil, http.StatusBadRequest, fmt.Errorf("gzip body: %w", err)
		}
		defer zr.Close()
		body = zr
	default:
		return nil, http.StatusUnsupportedMediaType, fmt.Errorf("Content-Encoding %q: this server reads zstd, gzip and identity", enc)
	}
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	var mbe *http.MaxBytesError
	switch {
	// A zstd frame whose window or declared size passes the limit would decompress past it.
	case errors.As(err, &mbe), err == nil && int64(len(data)) > limit, errors.Is(err, zstd.ErrWindowSizeExceeded),
		errors.Is(err, zstd.ErrDecoderSizeExceeded), errors.Is(err, zstd.ErrFrameSizeExceeded):
		return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the request body is larger than this server's %d bytes (after decompressing)", limit)
	case err != nil:
		return nil, http.StatusBadRequest, fmt.Errorf("reading the body: %w", err)
	}
	return data, 0, nil
}

// writeJSON writes v as the response body with status (<, > and & as they are: messages
// quote "<key>").
func writeJSON(w http.ResponseWriter, status int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		b.Reset()
		b.WriteString(`{"detail":"cannot encode the response"}` + "\n")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

// writeDetail writes {"detail": msg}, FastAPI's shape for an error other than validation.
func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

// statusWriter records the status written, for the log and the metrics.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
