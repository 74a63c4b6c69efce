package systemone

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/gojev/gojev"
)

// Defaults of Config.
const (
	DefaultMaxBodyBytes = 1 << 20 // 1 MiB, after decompressing
	DefaultMaxQuestions = 64      // per request
	DefaultMaxInFlight  = 512     // questions being decided at once, over every request
	DefaultTimeout      = 2 * time.Minute
)

// Config configures a Handler.
type Config struct {
	// Decider decides every request's questions (one model); the handler does not close it.
	Decider *gojev.Decider
	// Model is what GET /v1/models lists, under its Name and under DefaultModel, and the model
	// answers name.
	Model Model
	// APIKeys are the bearer keys accepted ("Authorization: Bearer <key>"). Empty: every
	// request is accepted, with or without a key (serve it on a loopback address only).
	APIKeys []string
	// MaxBodyBytes bounds a request body after decompressing (0: DefaultMaxBodyBytes); a
	// larger one is refused with 413.
	MaxBodyBytes int64
	// MaxQuestions bounds the questions of one request (0: DefaultMaxQuestions); more is a 422.
	MaxQuestions int
	// MaxInFlight bounds the questions being decided at once over every request (0:
	// DefaultMaxInFlight). A request that would pass it is refused at once with 429 and
	// Retry-After, never queued without bound.
	MaxInFlight int
	// Timeout bounds one request's decisions (0: DefaultTimeout); past it the request fails
	// with 503 and Retry-After, and its work is dropped.
	Timeout time.Duration
	// Logger logs one line per request (nil: slog.Default()).
	Logger *slog.Logger
}

// Handler serves TypeSafe's System One API over a Decider: POST /v1/systemone, GET /v1/models
// (both behind the bearer keys) and GET /healthz. Bodies may come compressed
// (Content-Encoding zstd or gzip, as the official SDK sends bodies of 1 KiB and more); the size
// limit applies after decompressing. Errors have the API's shapes: 422 {"detail": [{"loc",
// "msg", "type"}]} for a request the API refuses (a validation error is never a 5xx), 401 for a
// wrong key, 404 for an unknown model, 413 for a body too large, 429 with Retry-After when
// MaxInFlight questions are in flight. A client that goes away cancels its request's work
// (its context), so a retried request is not decided twice at once.
type Handler struct {
	cfg      Config
	local    *Local
	mux      *http.ServeMux
	inFlight atomic.Int64
}

// NewHandler returns the handler of cfg, its zero fields at their defaults.
func NewHandler(cfg Config) *Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.MaxQuestions <= 0 {
		cfg.MaxQuestions = DefaultMaxQuestions
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = DefaultMaxInFlight
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &Handler{cfg: cfg, local: &Local{Decider: cfg.Decider, Model: cfg.Model.Name}, mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /v1/systemone", h.auth(h.systemOne))
	h.mux.HandleFunc("GET /v1/models", h.auth(h.models))
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	return h
}

// ServeHTTP routes a request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := requestID()
	w.Header().Set("X-TypeSafe-Request-Id", id)
	rec := &statusWriter{ResponseWriter: w}
	start := time.Now()
	info := &requestInfo{}
	h.mux.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), infoKey{}, info)))
	attrs := []any{"id", id, "method", r.Method, "path", r.URL.Path, "status", rec.status,
		"ms", float64(time.Since(start).Microseconds()) / 1000, "remote", r.RemoteAddr}
	if info.questions > 0 {
		attrs = append(attrs, "questions", info.questions, "input_tokens", info.usage.InputTokens)
	}
	if info.err != nil {
		attrs = append(attrs, "error", info.err.Error())
	}
	h.cfg.Logger.Info("systemone", attrs...)
}

// InFlight is how many questions are being decided now.
func (h *Handler) InFlight() int64 { return h.inFlight.Load() }

// requestInfo is what a request's log line says beyond its status.
type requestInfo struct {
	questions int
	usage     Usage
	err       error
}

type infoKey struct{}

func infoOf(r *http.Request) *requestInfo {
	if i, ok := r.Context().Value(infoKey{}).(*requestInfo); ok {
		return i
	}
	return &requestInfo{}
}

// auth checks the bearer key when keys are configured.
func (h *Handler) auth(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if len(h.cfg.APIKeys) == 0 {
			next(w, r)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		for _, k := range h.cfg.APIKeys {
			if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(k)) == 1 {
				next(w, r)
				return
			}
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="systemone"`)
		writeDetail(w, http.StatusUnauthorized, "invalid or missing API key (Authorization: Bearer <key>)")
	}
}

func (h *Handler) models(w http.ResponseWriter, _ *http.Request) {
	alias := h.cfg.Model
	alias.Name = DefaultModel
	writeJSON(w, http.StatusOK, ModelList{Models: []Model{h.cfg.Model, alias}})
}

func (h *Handler) systemOne(w http.ResponseWriter, r *http.Request) {
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
	n := int64(len(req.Questions))
	if h.inFlight.Add(n) > int64(h.cfg.MaxInFlight) {
		h.inFlight.Add(-n)
		w.Header().Set("Retry-After", "1")
		writeDetail(w, http.StatusTooManyRequests, fmt.Sprintf("the server is deciding %d questions, its limit: retry in a second", h.cfg.MaxInFlight))
		return
	}
	defer h.inFlight.Add(-n)
	ctx, cancel := context.WithTimeout(r.Context(), h.cfg.Timeout)
	defer cancel()
	resp, err := h.local.Ask(ctx, req)
	info := infoOf(r)
	info.questions, info.err = len(req.Questions), err
	if resp != nil {
		info.usage = resp.Usage
	}
	switch {
	case err == nil:
		writeJSON(w, http.StatusOK, resp)
	case errors.As(err, &ve):
		writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"detail": ve})
	case errors.Is(err, ErrUnknownModel):
		writeDetail(w, http.StatusNotFound, err.Error())
	case r.Context().Err() != nil:
		// The client went away: its work was dropped, and nobody reads an answer.
		writeDetail(w, 499, "client closed the request")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, gojev.ErrClosed):
		w.Header().Set("Retry-After", "1")
		writeDetail(w, http.StatusServiceUnavailable, err.Error())
	default:
		writeDetail(w, http.StatusInternalServerError, err.Error())
	}
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

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"cannot encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeDetail writes {"detail": msg}, FastAPI's shape for an error other than validation.
func writeDetail(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"detail": msg})
}

// statusWriter records the status written, for the log.
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

// requestID is a random request id, as the response header carries it.
func requestID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
