package systemone_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/systemone"
)

// slowServer serves the API over a scripted runtime (whose every decode may take a Delay),
// warmed up (the decode rate measured) as jev serve is.
func slowServer(t *testing.T, cfg systemone.Config, rt *backendtest.Scripted, opts gojev.Options) (*httptest.Server, *systemone.Handler, *gojev.Decider) {
	t.Helper()
	srv, h, d := serverOn(t, cfg, rt, opts)
	require.NoError(t, h.Warmup(context.Background()))
	return srv, h, d
}

// choiceRequest is a request of one choice question about state n (one prompt).
func choiceRequest(n int) string {
	return fmt.Sprintf(`{"model": "jev-latest", "state": "ticket %d", "questions": {"team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Charges.", "shipping": "Parcels."}}}}`, n)
}

// answer is one HTTP answer: its status, Retry-After and Retry-After-Ms, and how long it took.
type answer struct {
	status            int
	retryAfter, retMS string
	took              time.Duration
	detail            string
}

func send(t *testing.T, srv *httptest.Server, body string, headers ...string) answer {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/systemone", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	t0 := time.Now()
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), retMS: resp.Header.Get("Retry-After-Ms"),
		took: time.Since(t0), detail: string(b)}
}

// A burst far above what the runtime decodes within the timeout: every first answer is a 200
// or, at once, a 429 saying when to retry; none waits out its deadline only to fail (before,
// every request was queued and those at the back got a 503 after the whole timeout); and
// retrying as told, every request is answered.
func TestABurstIsAdmittedOrToldWhenToRetry(t *testing.T) {
	const n, delay, timeout = 30, 100 * time.Millisecond, 1500 * time.Millisecond
	srv, h, _ := slowServer(t, systemone.Config{Timeout: timeout}, &backendtest.Scripted{Delay: delay}, gojev.Options{})
	firsts := make([]answer, n)
	finals := make([]answer, n)
	tries := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for {
				a := send(t, srv, choiceRequest(i))
				if tries[i] == 0 {
					firsts[i] = a
				}
				tries[i]++
				if a.status != http.StatusTooManyRequests && a.status != http.StatusServiceUnavailable {
					finals[i] = a
					return
				}
				ms, err := strconv.Atoi(a.retMS)
				if !assert.NoError(t, err, "a refusal says when to retry: %+v", a) || tries[i] > 50 {
					finals[i] = a
					return
				}
				time.Sleep(time.Duration(ms) * time.Millisecond)
			}
		})
	}
	wg.Wait()
	admitted, refused := 0, 0
	for i, a := range firsts {
		switch a.status {
		case http.StatusOK:
			admitted++
			assert.Less(t, a.took, timeout, "request %d: admitted, answered within its deadline", i)
		case http.StatusTooManyRequests:
			refused++
			assert.Less(t, a.took, 500*time.Millisecond, "request %d: refused at once", i)
			assert.NotEmpty(t, a.retryAfter, "request %d: Retry-After", i)
			s, err := strconv.Atoi(a.retryAfter)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, s, 1)
		default:
			t.Errorf("request %d: first answer %d (%s): want 200, or 429 at once", i, a.status, a.detail)
		}
	}
	assert.Positive(t, admitted)
	assert.Positive(t, refused, "3 s of work, 1.5 s allowed: some are told to come back")

	assert.Less(t, admitted, n)
	for i, a := range finals {
		assert.Equal(t, http.StatusOK, a.status, "request %d, after %d tries: %s", i, tries[i], a.detail)
	}
	assert.Zero(t, h.InFlight(), "every admitted prompt released")
}

// An idle server never refuses with 429, whatever the request's own estimate; a client's
// deadline (X-Request-Timeout) shorter than the work ahead of it is a 429 at once, while the
// same request without one is admitted.
func TestIdleServerNeverRefusesAndClientDeadlines(t *testing.T) {
	srv, _, _ := slowServer(t, systemone.Config{Timeout: 10 * time.Second}, &backendtest.Scripted{Delay: 150 * time.Millisecond}, gojev.Options{})
	a := send(t, srv, choiceRequest(0), systemone.TimeoutHeader, "0.05")
	assert.NotEqual(t, http.StatusTooManyRequests, a.status, "idle: admitted (then past its own deadline: %s)", a.detail)
	assert.Equal(t, http.StatusServiceUnavailable, a.status, "admitted, then past its own 50 ms deadline")

	var wg sync.WaitGroup
	for i := range 8 { // 1.2 s of work ahead
		wg.Go(func() { send(t, srv, choiceRequest(100+i)) })
	}
	time.Sleep(100 * time.Millisecond)
	a = send(t, srv, choiceRequest(1), systemone.TimeoutHeader, "0.4")
	assert.Equal(t, http.StatusTooManyRequests, a.status, a.detail)
	assert.Less(t, a.took, 300*time.Millisecond)
	assert.Regexp(t, `deadline of (39[0-9](\.[0-9]+)?|400)ms`, a.detail)
	resp, err := srv.Client().Get(srv.URL + "/readyz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "overloaded: it refused a request just now")
	assert.Contains(t, string(b), `"overloaded"`)
	assert.NotEmpty(t, resp.Header.Get("Retry-After"))
	a = send(t, srv, choiceRequest(2))
	assert.Equal(t, http.StatusOK, a.status, "without a client deadline the server's 10 s: admitted")
	wg.Wait()

	a = send(t, srv, choiceRequest(3), systemone.TimeoutHeader, "soon")
	assert.Equal(t, http.StatusBadRequest, a.status, a.detail)
}

// A request an idle server could never take is a 422 naming the limit, not a 429 to retry
// forever; limits that contradict each other are refused when the handler is made.
func TestLimitsAnIdleServerCannotMeet(t *testing.T) {
	srv, _, d := slowServer(t, systemone.Config{MaxInFlight: 4, MaxQuestions: 2}, &backendtest.Scripted{},
		gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout}})
	var crit []string
	for i := range 20 {
		crit = append(crit, fmt.Sprintf("%q: \"option %d\"", "c"+strconv.Itoa(i), i))
	}
	q := `{"type": "choice", "instructions": "Which?", "criteria": {` + strings.Join(crit, ", ") + `}}`
	body := `{"model": "jev-latest", "state": "s", "questions": {"a": ` + q + `, "b": ` + q + `}}`
	before := d.Stats()
	a := send(t, srv, body)
	assert.Equal(t, http.StatusUnprocessableEntity, a.status, a.detail)
	assert.Contains(t, a.detail, "need 6 prompts")
	assert.Contains(t, a.detail, "--max-in-flight")
	assert.Equal(t, before, d.Stats(), "nothing decoded")

	_, err := systemone.NewHandler(systemone.Config{Decider: d, MaxQuestions: 10, MaxInFlight: 5})
	assert.ErrorIs(t, err, systemone.ErrConfig)
	_, err = systemone.NewHandler(systemone.Config{Decider: d, AllowedOrigins: []string{"example.com"}})
	assert.ErrorIs(t, err, systemone.ErrConfig)
	_, err = systemone.NewHandler(systemone.Config{})
	assert.ErrorIs(t, err, systemone.ErrConfig)
}

// A question whose prompt is longer than n_ctx is a 422 before anything of its request is
// queued.
func TestTooLongIsRefusedBeforeQueueing(t *testing.T) {
	srv, _, d := slowServer(t, systemone.Config{}, &backendtest.Scripted{NCtx: 500}, gojev.Options{})
	before := d.Stats()
	body := `{"model": "jev-latest", "state": "s", "questions": {"a": {"type": "choice", "criteria": {"x": null, "y": null}}, "b": {"type": "choice", "instructions": "` +
		strings.Repeat("Which one? ", 60) + `", "criteria": {"x": null, "y": null}}}}`
	a := send(t, srv, body)
	require.Equal(t, http.StatusUnprocessableEntity, a.status, a.detail)
	assert.Contains(t, a.detail, "context_length_exceeded")
	assert.Contains(t, a.detail, "n_ctx of 500 tokens")
	assert.Equal(t, before.Decodes, d.Stats().Decodes, "question a was not decoded")
}

// Drain: new requests get 503 with Retry-After and /readyz turns 503, while the requests
// admitted before it are answered.
func TestDrainFinishesWhatItAccepted(t *testing.T) {
	srv, h, _ := slowServer(t, systemone.Config{}, &backendtest.Scripted{Delay: 150 * time.Millisecond}, gojev.Options{})
	ready := func() int {
		resp, err := srv.Client().Get(srv.URL + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, ready())
	results := make([]answer, 4)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = send(t, srv, choiceRequest(i)) })
	}
	require.Eventually(t, func() bool { return h.InFlight() == 4 }, 2*time.Second, 5*time.Millisecond)
	h.Drain()
	assert.Equal(t, http.StatusServiceUnavailable, ready())
	a := send(t, srv, choiceRequest(9))
	assert.Equal(t, http.StatusServiceUnavailable, a.status)
	assert.NotEmpty(t, a.retryAfter)
	assert.Contains(t, a.detail, "shutting down")
	wg.Wait()
	for i, r := range results {
		assert.Equal(t, http.StatusOK, r.status, "request %d, admitted before the drain: %s", i, r.detail)
	}
}
