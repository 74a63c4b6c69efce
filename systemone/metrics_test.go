package systemone_test

import (
	"net/http"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/systemone"
)

// metricValue is the value of the family's metric whose labels include labels ("k=v" pairs).
func metricValue(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "metric %s exposed", name)
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		match := true
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			match = match && have[k] == v
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

// GET /metrics is Prometheus's text format, read by Prometheus's own parser: requests by
// endpoint and status, questions by type, the queue, the decoder's totals, the model; behind
// the keys as the API is.
func TestMetricsAreScrapedByPrometheusParser(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{APIKeys: []string{"k"}}, nil)
	for range 2 {
		status, body := post(t, srv, []byte(ticketRequest), "Authorization", "Bearer k")
		require.Equal(t, http.StatusOK, status, body)
	}
	status, _ := post(t, srv, []byte(`{"model": "jev-latest"}`), "Authorization", "Bearer k")
	require.Equal(t, http.StatusUnprocessableEntity, status)
	resp, _ := do(t, srv, http.MethodGet, "/metrics", "")
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "behind the keys")

	resp, body := do(t, srv, http.MethodGet, "/metrics", "", "Authorization", "Bearer k")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err)

	assert.Equal(t, 2.0, metricValue(t, fams, "gojev_http_requests_total", "endpoint=/v1/systemone", "code=200"))
	assert.Equal(t, 1.0, metricValue(t, fams, "gojev_http_requests_total", "endpoint=/v1/systemone", "code=422"))
	assert.Equal(t, 1.0, metricValue(t, fams, "gojev_http_requests_total", "endpoint=/metrics", "code=401"))
	assert.Equal(t, 2.0, metricValue(t, fams, "gojev_questions_total", "type=choice"))
	assert.Equal(t, 2.0, metricValue(t, fams, "gojev_questions_total", "type=score"))
	assert.Equal(t, 0.0, metricValue(t, fams, "gojev_questions_total", "type=noul"))
	assert.Equal(t, 4.0, metricValue(t, fams, "gojev_queue_wait_seconds"), "one observation a question")
	assert.Equal(t, 12.0, metricValue(t, fams, "gojev_decoder_prompts_total"), "a choice's prompt and a score's two (its rubric listed and reversed), twice, and the rubric's six content-free reads once")
	assert.Greater(t, metricValue(t, fams, "gojev_decoder_prompt_tokens_total"), 100.0)
	assert.Equal(t, 0.0, metricValue(t, fams, "gojev_queue_prompts"))
	assert.Equal(t, 0.0, metricValue(t, fams, "gojev_admitted_requests"))
	assert.Equal(t, 1.0, metricValue(t, fams, "gojev_model_info", "model=scripted.gguf", "prompt_version=direct-options-v1", "backend=scripted"))
	assert.Equal(t, 1.0, metricValue(t, fams, "gojev_ready"))
	assert.Equal(t, 0.0, metricValue(t, fams, "gojev_admission_refused_total", "reason=deadline"))
	assert.Equal(t, 3.0, metricValue(t, fams, "gojev_http_request_duration_seconds", "endpoint=/v1/systemone"), "every request timed")
	assert.Contains(t, fams, "process_resident_memory_bytes")
	assert.Contains(t, fams, "go_goroutines")
}
