package systemone

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are a Handler's Prometheus metrics (GET /metrics, the text exposition format), in a
// registry of its own, so several Handlers in one process do not collide. Names follow
// Prometheus's conventions: a gojev_ prefix, seconds, _total for counters; labels take a
// fixed set of values.
type metrics struct {
	reg       *prometheus.Registry
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	questions *prometheus.CounterVec
	refused   *prometheus.CounterVec
	queueWait prometheus.Histogram
}

// endpoints are the paths metrics name; any other is "other".
var endpoints = []string{"/v1/systemone", "/v1/models", "/healthz", "/readyz", "/metrics"}

func newMetrics(h *Handler) *metrics {
	m := &metrics{reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gojev_http_requests_total",
		Help: "HTTP requests answered, by endpoint and status code."}, []string{"endpoint", "code"})
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "gojev_http_request_duration_seconds",
		Help:    "Time from a request's arrival to its answer, by endpoint.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300}}, []string{"endpoint"})
	m.questions = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gojev_questions_total",
		Help: "Questions answered, by type (choice, score, noul)."}, []string{"type"})
	m.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gojev_admission_refused_total",
		Help: "Requests refused before any work, by reason: deadline (the work ahead would not end within the request's deadline: 429), prompts (the prompt limit: 429), draining (503), too_large (more prompts than an idle server takes: 422)."},
		[]string{"reason"})
	m.queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{Name: "gojev_queue_wait_seconds",
		Help:    "Time an answered question's prompts waited in the scheduler before their first decode.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120}})
	for _, e := range append(endpoints, "other") {
		m.duration.WithLabelValues(e)
	}
	for _, t := range []string{"choice", "score", "noul"} {
		m.questions.WithLabelValues(t)
	}
	for _, r := range []string{refuseDeadline, refusePrompts, "draining", "too_large"} {
		m.refused.WithLabelValues(r)
	}
	d := h.cfg.Decider
	stat := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	m.reg.MustRegister(m.requests, m.duration, m.questions, m.refused, m.queueWait,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "gojev_model_info",
			Help: "The model this server answers with (always 1): its name as answers carry it, its prompt version, runtime and decode mode.",
			ConstLabels: prometheus.Labels{"model": h.cfg.Model.Name, "prompt_version": d.Check().PromptVersion,
				"backend": d.Check().Backend, "decode": d.Check().Decode}}, func() float64 { return 1 }),
		stat("gojev_decoder_rows_total", "Rows (choice and score questions) the Decider decided.", func() float64 { return float64(d.Stats().Rows) }),
		stat("gojev_decoder_prompts_total", "Prompts the Decider read an answer token from.", func() float64 { return float64(d.Stats().Prompts) }),
		stat("gojev_decoder_prompt_tokens_total", "Tokens of those prompts, as a run without prefix reuse decodes them.", func() float64 { return float64(d.Stats().PromptTokens) }),
		stat("gojev_decoder_decoded_tokens_total", "Prompt tokens the runtime decoded (after the prefix reused from its cache).", func() float64 { return float64(d.Stats().DecodedTokens) }),
		stat("gojev_decoder_decode_seconds_total", "Time spent in the runtime's decodes.", func() float64 { return time.Duration(d.Stats().DecodeNS).Seconds() }),
		stat("gojev_decoder_prepare_seconds_total", "Time spent preparing prompts (rendering, checks, tokenizing).", func() float64 { return time.Duration(d.Stats().PrepareNS).Seconds() }),
		gauge("gojev_queue_prompts", "Prompts waiting in the Decider's scheduler or being decoded.", func() float64 { return float64(d.Queued()) }),
		gauge("gojev_admitted_requests", "Requests admitted and not yet answered (in flight).", func() float64 { return float64(h.adm.load().Requests) }),
		gauge("gojev_admitted_prompts", "Prompts of the requests in flight.", func() float64 { return float64(h.adm.load().Prompts) }),
		gauge("gojev_admitted_tokens", "Tokens decoding the requests in flight takes (their prompts' distinct tokens; estimated until rendered).", func() float64 { return h.adm.load().Tokens }),
		gauge("gojev_expected_wait_seconds", "Expected time before a request arriving now is decoded: the work admitted, at the measured rate.", func() float64 { return h.adm.load().Wait.Seconds() }),
		gauge("gojev_admission_seconds_per_prompt", "Admission's time model: seconds a prompt's read-out takes, besides its tokens (0 until measured).", func() float64 { return h.adm.load().SecPerPrompt }),
		gauge("gojev_admission_seconds_per_token", "Admission's time model: seconds a decoded token takes (0 until measured).", func() float64 { return h.adm.load().SecPerToken }),
		gauge("gojev_ready", "1 when the server takes new requests (GET /readyz answers 200), else 0.", func() float64 {
			if ok, _, _ := h.readiness(); ok {
				return 1
			}
			return 0
		}),
		gauge("gojev_draining", "1 once the server is draining (it refuses new requests and finishes the accepted ones).", func() float64 {
			if h.draining.Load() {
				return 1
			}
			return 0
		}),
	)
	return m
}

// handler serves the registry in Prometheus's text format.
func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// observe counts one answered request.
func (m *metrics) observe(endpoint string, code int, took time.Duration) {
	m.requests.WithLabelValues(endpoint, strconv.Itoa(code)).Inc()
	m.duration.WithLabelValues(endpoint).Observe(took.Seconds())
}

// endpointOf is the metrics label of a path.
func endpointOf(path string) string {
	for _, e := range endpoints {
		if path == e {
			return e
		}
	}
	return "other"
}
