package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/pyjson"
	"github.com/gojev/gojev/systemone"
)

// ServeConfig configures MeasureServe.
type ServeConfig struct {
	// Decider decides both runs (its model loaded once).
	Decider *gojev.Decider
	// Rows are typed rows' lines ({"id", "state", "questions"}): jev decide's input, and the
	// requests' bodies (state and questions).
	Rows [][]byte
	// Clients send requests at once, each waiting for its answer before the next; Requests is
	// how many in all (0: one per row), cycling through the rows.
	Clients, Requests int
	// Burst, when not 0, sends that many requests at once instead (MeasureBurst), each retrying
	// as told, to a handler whose Timeout is Timeout (0: the default) and which was warmed up
	// as jev serve is.
	Burst   int
	Timeout time.Duration
	Log     io.Writer
}

// ServeReport compares jev serve under load with jev decide on the same questions.
type ServeReport struct {
	Rows, Questions int
	// Decide is jev decide's run of the rows (batch.Run, its default window): questions a
	// second over its wall time.
	DecideS, DecideQuestionsPerS float64
	// Serve is the server's: Requests requests from Clients clients over loopback HTTP, their
	// questions a second, and each request's latency.
	Clients, Requests          int
	ServeS, ServeQuestionsPerS float64
	P50MS, P95MS, P99MS        float64
	Ratio                      float64 // ServeQuestionsPerS / DecideQuestionsPerS
	Failed                     int     // requests that did not get a 200
	RSSMiB                     []float64
	RSSGrowthPercent           float64 // last sample over the one after the first tenth
	// Burst is the burst's report (ServeConfig.Burst); ServeQuestionsPerS and Ratio are then
	// its questions a second.
	Burst *BurstReport `json:",omitempty"`
}

// MeasureServe decides the first row untimed (the weights read in), runs the rows through
// batch.Run (as jev decide does), then serves the API over the same Decider on a loopback port
// and sends the rows' questions from concurrent clients, sampling the process's resident memory
// every tenth of the requests.
func MeasureServe(ctx context.Context, cfg ServeConfig) (*ServeReport, error) {
	reqs := make([][]byte, len(cfg.Rows))
	questions := make([]int, len(cfg.Rows))
	for i, line := range cfg.Rows {
		body, n, err := RequestOf(line)
		if err != nil {
			return nil, fmt.Errorf("row %d: %w", i+1, err)
		}
		reqs[i], questions[i] = body, n
	}
	rep := &ServeReport{Rows: len(reqs), Clients: max(cfg.Clients, 1), Requests: cfg.Requests}
	if rep.Requests <= 0 {
		rep.Requests = len(reqs)
	}
	for _, n := range questions {
		rep.Questions += n
	}
	// A first row decided untimed: the weights are read in (memory-mapped) before either run.
	if _, err := batch.Run(ctx, cfg.Decider, bytes.NewReader(cfg.Rows[0]), io.Discard, batch.Config{}); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "bench: jev decide's run of %d typed rows (%d questions) ...\n", rep.Rows, rep.Questions)
	start := time.Now()
	sum, err := batch.Run(ctx, cfg.Decider, bytes.NewReader(bytes.Join(cfg.Rows, []byte("\n"))), io.Discard, batch.Config{})
	if err != nil {
		return nil, err
	}
	if sum.Errors > 0 {
		return nil, fmt.Errorf("%d of the rows are not decided (error records): fix the rows first", sum.Errors)
	}
	rep.DecideS = time.Since(start).Seconds()
	rep.DecideQuestionsPerS = float64(rep.Questions) / rep.DecideS

	h, err := systemone.NewHandler(systemone.Config{Decider: cfg.Decider, Model: systemone.Model{Name: "bench"},
		MaxInFlight: 1 << 20, Timeout: cfg.Timeout, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	if cfg.Burst > 0 {
		if err := h.Warmup(ctx); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	if cfg.Burst > 0 {
		bodies, qs := make([][]byte, cfg.Burst), make([]int, cfg.Burst)
		for i := range bodies {
			bodies[i], qs[i] = reqs[i%len(reqs)], questions[i%len(reqs)]
		}
		fmt.Fprintf(cfg.Log, "bench: %d requests at once to the server (timeout %s) ...\n", cfg.Burst, h.Config().Timeout)
		b, err := MeasureBurst(ctx, BurstConfig{URL: "http://" + ln.Addr().String(), Bodies: bodies, Questions: qs, Log: cfg.Log})
		if err != nil {
			return nil, err
		}
		rep.Burst, rep.Requests, rep.Clients = b, b.Requests, b.Requests
		rep.ServeS, rep.ServeQuestionsPerS, rep.Failed = b.AllMS/1000, b.QuestionsPerS, b.Failed
		if rep.DecideQuestionsPerS > 0 {
			rep.Ratio = rep.ServeQuestionsPerS / rep.DecideQuestionsPerS
		}
		return rep, nil
	}
	url := "http://" + ln.Addr().String() + "/v1/systemone"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: rep.Clients}}

	fmt.Fprintf(cfg.Log, "bench: %d requests from %d clients to the server ...\n", rep.Requests, rep.Clients)
	lat := make([]float64, rep.Requests)
	var next, failed, asked atomic.Int64
	var mu sync.Mutex
	tenth := max(rep.Requests/10, 1)
	start = time.Now()
	var wg sync.WaitGroup
	for range rep.Clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= rep.Requests || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(reqs[i%len(reqs)]))
				if err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					failed.Add(1)
				}
				lat[i] = float64(time.Since(t0).Microseconds()) / 1000
				asked.Add(int64(questions[i%len(reqs)]))
				if (i+1)%tenth == 0 {
					mu.Lock()
					rep.RSSMiB = append(rep.RSSMiB, rssMiB())
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	rep.ServeS = time.Since(start).Seconds()
	rep.ServeQuestionsPerS = float64(asked.Load()) / rep.ServeS
	rep.Failed = int(failed.Load())
	if rep.DecideQuestionsPerS > 0 {
		rep.Ratio = rep.ServeQuestionsPerS / rep.DecideQuestionsPerS
	}
	slices.Sort(lat)
	rep.P50MS, rep.P95MS, rep.P99MS = pct(lat, 0.5), pct(lat, 0.95), pct(lat, 0.99)
	if n := len(rep.RSSMiB); n >= 2 && rep.RSSMiB[0] > 0 {
		rep.RSSGrowthPercent = 100 * (rep.RSSMiB[n-1] - rep.RSSMiB[0]) / rep.RSSMiB[0]
	}
	return rep, ctx.Err()
}

// WriteText prints the comparison.
func (r *ServeReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "jev decide: %d typed rows, %d questions in %.1f s: %.2f questions/s\n", r.Rows, r.Questions, r.DecideS, r.DecideQuestionsPerS)
	if r.Burst != nil {
		r.Burst.WriteText(w)
		fmt.Fprintf(w, "jev serve:  %.2f questions/s under the burst (%.2fx jev decide)\n", r.ServeQuestionsPerS, r.Ratio)
		return
	}
	fmt.Fprintf(w, "jev serve:  %d requests from %d clients in %.1f s: %.2f questions/s (%.2fx jev decide), latency p50 %.0f ms, p95 %.0f ms, p99 %.0f ms, %d failed\n",
		r.Requests, r.Clients, r.ServeS, r.ServeQuestionsPerS, r.Ratio, r.P50MS, r.P95MS, r.P99MS, r.Failed)
	if len(r.RSSMiB) > 0 {
		parts := make([]string, len(r.RSSMiB))
		for i, v := range r.RSSMiB {
			parts[i] = strconv.FormatFloat(v, 'f', 0, 64)
		}
		fmt.Fprintf(w, "RSS (MiB) every tenth of the requests: %s; %+.2f%% from the first to the last\n", strings.Join(parts, " "), r.RSSGrowthPercent)
	}
}

// RequestOf turns a typed row ({"id", "state", "questions"}) into a System One request body
// for jev-latest and counts its questions.
func RequestOf(line []byte) ([]byte, int, error) {
	v, err := pyjson.Decode(line)
	if err != nil {
		return nil, 0, err
	}
	o, ok := v.(pyjson.Object)
	if !ok {
		return nil, 0, errors.New("not a JSON object")
	}
	req := &systemone.Request{Model: systemone.DefaultModel}
	for _, m := range o {
		switch m.Key {
		case "state":
			req.State = m.Value
		case "questions":
			qs, _ := m.Value.(pyjson.Object)
			if req.Questions, err = systemone.ParseQuestions(qs); err != nil {
				return nil, 0, err
			}
		}
	}
	if req.State == nil || len(req.Questions) == 0 {
		return nil, 0, errors.New("a typed row needs a state and questions")
	}
	b, err := req.MarshalJSON()
	return b, len(req.Questions), err
}

func pct(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(int(p*float64(len(sorted))), len(sorted)-1)]
}

// rssMiB is this process's resident memory (VmRSS), 0 where /proc is not there.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
