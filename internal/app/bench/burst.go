package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// BurstConfig configures MeasureBurst.
type BurstConfig struct {
	// URL is the server's root ("http://127.0.0.1:8080"); the requests go to /v1/systemone.
	URL    string
	APIKey string
	// Bodies are the requests' bodies (System One requests), all sent at once, each by a
	// client of its own.
	Bodies [][]byte
	// Questions is the questions of each body (for questions a second).
	Questions []int
	// GiveUp is how long a client keeps retrying one request (0: 10 minutes).
	GiveUp time.Duration
	// AfterSent, when set, runs once every request was sent and Delay passed (the SIGTERM of a
	// drain measurement); MeasureBurst returns after it.
	AfterSent func()
	Delay     time.Duration
	Log       io.Writer
}

// BurstRequest is one request of a burst: its first answer (status, time, the Retry-After it
// carried), how many times it was sent, and its last answer.
type BurstRequest struct {
	FirstStatus  int     `json:"first_status"`
	FirstMS      float64 `json:"first_ms"`
	FirstRetryMS float64 `json:"first_retry_after_ms,omitempty"`
	Sends        int     `json:"sends"`
	Status       int     `json:"status"`
	MS           float64 `json:"ms"`
	Error        string  `json:"error,omitempty"`
}

// BurstReport is what a burst measured.
type BurstReport struct {
	Requests, Questions int
	// First counts the first answers by status ("200", "429", "503", "error": no HTTP answer).
	First map[string]int
	// FirstOKMaxMS is the slowest first answer that was a 200; FirstRefusedMaxMS the slowest
	// that was a 429 or 503; RefusedWithoutRetryAfter the refusals that did not say when to
	// retry.
	FirstOKMaxMS, FirstRefusedMaxMS float64
	RefusedWithoutRetryAfter        int
	// Answered and Failed count the requests whose last answer was a 200, or not, after
	// retrying as told; AllMS is the time until the last of them.
	Answered, Failed int
	AllMS            float64
	QuestionsPerS    float64 // the burst's questions over AllMS
	Sends            int     // requests sent, retries included
	PerRequest       []BurstRequest
}

// MeasureBurst sends every body at once to a System One server, each from its own client,
// which retries a 429 or 503 after the delay its Retry-After-Ms (else Retry-After) says, and
// gives up on anything else; it records each request's first and last answers.
func MeasureBurst(ctx context.Context, cfg BurstConfig) (*BurstReport, error) {
	if len(cfg.Bodies) == 0 {
		return nil, fmt.Errorf("bench: a burst of no requests")
	}
	giveUp := cfg.GiveUp
	if giveUp <= 0 {
		giveUp = 10 * time.Minute
	}
	url := strings.TrimSuffix(cfg.URL, "/") + "/v1/systemone"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: len(cfg.Bodies), MaxConnsPerHost: 0}}
	rep := &BurstReport{Requests: len(cfg.Bodies), First: map[string]int{}, PerRequest: make([]BurstRequest, len(cfg.Bodies))}
	for _, q := range cfg.Questions {
		rep.Questions += q
	}
	var sent sync.WaitGroup
	sent.Add(len(cfg.Bodies))
	start := time.Now()
	var wg sync.WaitGroup
	for i, body := range cfg.Bodies {
		wg.Go(func() {
			r := &rep.PerRequest[i]
			first := true
			var once sync.Once
			wrote := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
				WroteRequest: func(httptrace.WroteRequestInfo) { once.Do(sent.Done) }})
			for {
				t0 := time.Now()
				status, retry, err := post(wrote, client, url, cfg.APIKey, body)
				once.Do(sent.Done) // a request that failed before it was written
				if first {
					first = false
					r.FirstStatus, r.FirstMS = status, ms(time.Since(t0))
					r.FirstRetryMS = ms(retry)
				}
				r.Sends++
				r.Status, r.MS = status, ms(time.Since(start))
				if err != nil {
					r.Error = err.Error()
				}
				if (status != http.StatusTooManyRequests && status != http.StatusServiceUnavailable) || retry <= 0 ||
					time.Since(start)+retry > giveUp || ctx.Err() != nil {
					return
				}
				select {
				case <-time.After(retry):
				case <-ctx.Done():
					return
				}
			}
		})
	}
	if cfg.AfterSent != nil {
		wg.Go(func() {
			sent.Wait()
			time.Sleep(cfg.Delay)
			cfg.AfterSent()
		})
	}
	wg.Wait()
	for _, r := range rep.PerRequest {
		key := strconv.Itoa(r.FirstStatus)
		if r.FirstStatus == 0 {
			key = "error"
		}
		rep.First[key]++
		rep.Sends += r.Sends
		switch r.FirstStatus {
		case http.StatusOK:
			rep.FirstOKMaxMS = max(rep.FirstOKMaxMS, r.FirstMS)
		case http.StatusTooManyRequests, http.StatusServiceUnavailable:
			rep.FirstRefusedMaxMS = max(rep.FirstRefusedMaxMS, r.FirstMS)
			if r.FirstRetryMS == 0 {
				rep.RefusedWithoutRetryAfter++
			}
		}
		if r.Status == http.StatusOK {
			rep.Answered++
		} else {
			rep.Failed++
		}
		rep.AllMS = max(rep.AllMS, r.MS)
	}
	if rep.AllMS > 0 {
		rep.QuestionsPerS = float64(rep.Questions) / (rep.AllMS / 1000)
	}
	return rep, ctx.Err()
}

// post sends one request and returns its status and the retry delay it asked for (0: none);
// err is a transport error (status 0).
func post(ctx context.Context, client *http.Client, url, key string, body []byte) (int, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	var retry time.Duration
	if v, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && v > 0 {
		retry = time.Duration(v * float64(time.Millisecond))
	} else if v, err := strconv.ParseFloat(resp.Header.Get("Retry-After"), 64); err == nil && v > 0 {
		retry = time.Duration(v * float64(time.Second))
	}
	return resp.StatusCode, retry, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteText prints the burst's figures.
func (r *BurstReport) WriteText(w io.Writer) {
	var keys []string
	for k := range r.First {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s ×%d", k, r.First[k]))
	}
	fmt.Fprintf(w, "burst: %d requests (%d questions) at once: first answers %s; slowest first 200 %.1f s, slowest first 429/503 %.2f s, %d refusals without Retry-After\n",
		r.Requests, r.Questions, strings.Join(parts, ", "), r.FirstOKMaxMS/1000, r.FirstRefusedMaxMS/1000, r.RefusedWithoutRetryAfter)
	fmt.Fprintf(w, "burst: retrying as told: %d answered, %d failed, the last after %.1f s (%d sends in all): %.2f questions/s\n",
		r.Answered, r.Failed, r.AllMS/1000, r.Sends, r.QuestionsPerS)
}
