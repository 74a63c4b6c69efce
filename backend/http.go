package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gojev/gojev/contract"
)

// ErrHTTP wraps every failed call to the server; *HTTPError carries the details.
var ErrHTTP = errors.New("backend: runtime call failed")

// HTTPError is a call to the server that failed: the URL, and either the transport error or
// the HTTP status with the response body truncated to 400 characters (contract.rs post).
type HTTPError struct {
	Method string // "GET" for /health; "" means POST
	URL    string
	Status int    // 0 when no response came back
	Body   string // truncated
	Err    error  // transport or decoding error, nil for a bad status
}

func (e *HTTPError) Error() string {
	m := e.Method
	if m == "" {
		m = http.MethodPost
	}
	switch {
	case e.Status != 0 && e.Err == nil:
		return fmt.Sprintf("%s %s returned HTTP %d: %s", m, e.URL, e.Status, e.Body)
	case e.Status != 0:
		return fmt.Sprintf("%s %s returned an unexpected body (%v): %s", m, e.URL, e.Err, e.Body)
	default:
		return fmt.Sprintf("%s %s failed: %v", m, e.URL, e.Err)
	}
}

func (e *HTTPError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrHTTP, e.Err}
	}
	return []error{ErrHTTP}
}

// HTTPOptions configure an HTTP backend.
type HTTPOptions struct {
	Options
	// Model is the "model" field sent with each request (llama-server ignores it; a router
	// uses it). Default "".
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>".
	APIKey string
	// NProbs is the first n_probs asked of /completion (default 1000: on SmolLM2 an option
	// letter was often outside the top 64, and each repeat re-decodes the prompt). When an id is missing
	// from the top n_probs, the request is repeated with 8× as many, up to the vocabulary.
	NProbs int
	// Client is the HTTP client (default: one with a 10-minute timeout).
	Client *http.Client
	// CachePrompt lets the server reuse its prompt cache (cache_prompt=true): it then decodes
	// only what follows the prefix shared with its previous prompt, in batches that start
	// wherever that prefix ends, and a token's logits depend on the prompt before it (up to
	// 0.014 in PriDe's prior on SmolLM2-135M, measured; see Align for why). By default every
	// /completion sends cache_prompt=false: the server decodes each prompt whole, exactly as
	// the in-process runtime's logits for that prompt alone.
	CachePrompt bool
}

// HTTP is a llama-server reached over HTTP, porting the seed's RuntimeClient: it renders with
// POST /apply-template, tokenizes with /tokenize (add_special=false), detokenizes with
// /detokenize and reads next-token log-probabilities with /completion (n_predict=1, n_probs).
// Rendering uses the server's wall clock: TemplateTime is reported, not applied.
type HTTP struct {
	base   string
	opts   HTTPOptions
	kwargs map[string]any
	now    time.Time
	client *http.Client
}

// NewHTTP returns a backend for the server at baseURL (e.g. http://127.0.0.1:8080). It makes no
// request; the first call reports an unreachable server.
func NewHTTP(baseURL string, opts HTTPOptions) *HTTP {
	c := opts.Client
	if c == nil {
		c = &http.Client{Timeout: 10 * time.Minute}
	}
	if opts.NProbs <= 0 {
		opts.NProbs = 1000
	}
	return &HTTP{base: strings.TrimRight(baseURL, "/"), opts: opts, kwargs: opts.kwargs(), now: opts.clock(), client: c}
}

// Name returns the server's base URL.
func (h *HTTP) Name() string { return h.base }

// Renderer returns RendererServer.
func (h *HTTP) Renderer() string { return RendererServer }

// TemplateTime returns the date recorded for this run; the server itself reads its wall clock.
func (h *HTTP) TemplateTime() time.Time { return h.now }

// Close does nothing: the backend holds no server. It exists to satisfy Backend.
func (h *HTTP) Close() error { return nil }

func (h *HTTP) post(ctx context.Context, path string, body, out any) error {
	url := h.base + path
	payload, err := json.Marshal(body)
	if err != nil {
		return &HTTPError{URL: url, Err: err}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return &HTTPError{URL: url, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	if h.opts.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+h.opts.APIKey)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return &HTTPError{URL: url, Err: err}
	}
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	if err != nil {
		return &HTTPError{URL: url, Status: resp.StatusCode, Err: fmt.Errorf("reading the response: %w", err)}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &HTTPError{URL: url, Status: resp.StatusCode, Body: truncate(string(text))}
	}
	if err := json.Unmarshal(text, out); err != nil {
		return &HTTPError{URL: url, Status: resp.StatusCode, Body: truncate(string(text)), Err: err}
	}
	return nil
}

// truncate keeps the first 400 characters, adding "…" when it cut (contract.rs truncate).
func truncate(text string) string {
	r := []rune(text)
	if len(r) <= 400 {
		return text
	}
	return string(r[:400]) + "…"
}

// Render calls POST /apply-template {"model", "messages", "chat_template_kwargs"}.
func (h *HTTP) Render(ctx context.Context, messages []contract.ChatMessage) (string, error) {
	body := map[string]any{"model": h.opts.Model, "messages": messages, "chat_template_kwargs": h.kwargs}
	var out struct {
		Prompt *string `json:"prompt"`
	}
	if err := h.post(ctx, "/apply-template", body, &out); err != nil {
		return "", fmt.Errorf("rendering the chat template on the serving runtime failed: %w", err)
	}
	if out.Prompt == nil {
		return "", &HTTPError{URL: h.base + "/apply-template", Status: 200, Err: errors.New(`no "prompt" in the response`)}
	}
	return *out.Prompt, nil
}

// Tokenize calls POST /tokenize {"model", "content", "add_special": false, "parse_special"}.
func (h *HTTP) Tokenize(ctx context.Context, text string, parseSpecial bool) ([]int32, error) {
	body := map[string]any{"model": h.opts.Model, "content": text, "add_special": false, "parse_special": parseSpecial}
	var out struct {
		Tokens []int32 `json:"tokens"`
	}
	if err := h.post(ctx, "/tokenize", body, &out); err != nil {
		return nil, err
	}
	return out.Tokens, nil
}

// Detokenize calls POST /detokenize {"model", "tokens"}.
func (h *HTTP) Detokenize(ctx context.Context, tokens []int32) (string, error) {
	body := map[string]any{"model": h.opts.Model, "tokens": tokens}
	var out struct {
		Content string `json:"content"`
	}
	if err := h.post(ctx, "/detokenize", body, &out); err != nil {
		return "", err
	}
	return out.Content, nil
}

// maxNProbs bounds the escalation; llama-server returns at most n_vocab entries anyway.
const maxNProbs = 1 << 20

// NextToken calls POST /completion {"prompt": [token ids], "n_predict": 1, "n_probs": N} and
// reads completion_probabilities[0].top_logprobs. With llama-server's default
// post_sampling_probs=false these are log-softmax over the full vocabulary's raw logits
// (get_token_probabilities, tools/server), unaffected by the sampler. Only the top N come back:
// if an id is missing, the request is repeated with 8×N (and cache_prompt=false, so that the
// server decodes the whole prompt again instead of only its last token), until the server
// returns fewer than asked (the whole vocabulary). Ids still missing are reported in a *MissingTokensError, never
// invented. Logits are nil: the server does not return raw logits.
func (h *HTTP) NextToken(ctx context.Context, prompt []int32, ids []int32) (Readout, error) {
	for n, retry := h.opts.NProbs, false; ; n, retry = n*8, true {
		got, returned, err := h.completion(ctx, prompt, n, !retry && h.opts.CachePrompt)
		if err != nil {
			return Readout{}, err
		}
		var missing []int32
		r := Readout{Logprobs: make([]float64, len(ids))}
		for i, id := range ids {
			lp, ok := got[id]
			if !ok {
				missing = append(missing, id)
				continue
			}
			r.Logprobs[i] = lp
		}
		if len(missing) == 0 {
			r.Decoded = len(prompt)
			return r, nil
		}
		if returned < n || n >= maxNProbs {
			return Readout{}, &MissingTokensError{URL: h.base, IDs: slices.Compact(missing), NProbs: n}
		}
	}
}

func (h *HTTP) completion(ctx context.Context, prompt []int32, nProbs int, cachePrompt bool) (map[int32]float64, int, error) {
	body := map[string]any{
		"prompt": prompt, "n_predict": 1, "n_probs": nProbs,
		// Greedy, so the one generated token is deterministic; the log-probs are pre-sampling.
		"temperature": 0,
	}
	if !cachePrompt {
		// A repeat of the same prompt: with its prompt cache the server would decode only the
		// last token again, through llama.cpp's one-token matrix-vector path, whose logits
		// differ (up to ~0.3 here) from the batched prompt pass the first answer came from.
		body["cache_prompt"] = false
	}
	var out struct {
		Probs []struct {
			TopLogprobs []struct {
				ID      int32   `json:"id"`
				Logprob float64 `json:"logprob"`
			} `json:"top_logprobs"`
		} `json:"completion_probabilities"`
	}
	if err := h.post(ctx, "/completion", body, &out); err != nil {
		return nil, 0, err
	}
	if len(out.Probs) == 0 {
		return nil, 0, &HTTPError{URL: h.base + "/completion", Status: 200, Err: errors.New("no completion_probabilities in the response")}
	}
	top := out.Probs[0].TopLogprobs
	got := make(map[int32]float64, len(top))
	for _, t := range top {
		got[t.ID] = t.Logprob
	}
	return got, len(top), nil
}

// Ready is Health within 30 seconds, its error saying what to do: an unreachable or
// still-loading server is reported as such before any work, not as a model failing its
// checks.
func (h *HTTP) Ready(ctx context.Context) error {
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := h.Health(hctx); err != nil {
		return fmt.Errorf("the llama-server at %s is not reachable or not ready (start it, or check the URL): %w", h.Name(), err)
	}
	return nil
}

// Health calls GET /health and returns nil when the server answers 200 (model loaded).
func (h *HTTP) Health(ctx context.Context) error {
	url := h.base + "/health"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return &HTTPError{Method: http.MethodGet, URL: url, Err: err}
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return &HTTPError{Method: http.MethodGet, URL: url, Err: err}
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return &HTTPError{Method: http.MethodGet, URL: url, Status: resp.StatusCode, Body: truncate(string(text))}
	}
	return nil
}
