package backend_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// fakeServer answers the llama-server endpoints the HTTP backend calls, recording requests.
type fakeServer struct {
	auth      atomic.Value // last Authorization header
	nProbs    []int        // n_probs of each /completion call
	cache     []any        // cache_prompt of each /completion call (nil: not sent)
	vocab     int          // tokens in the fake vocabulary: top_logprobs returns min(n_probs, vocab)
	lastBody  map[string]any
	failPaths map[string]int // path -> status to answer
}

func (f *fakeServer) handler(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.auth.Store(r.Header.Get("Authorization"))
		var body map[string]any
		require.NoError(t, json.NewDecoder(r.Body).Decode(&body))
		f.lastBody = body
		if st, ok := f.failPaths[r.URL.Path]; ok {
			w.WriteHeader(st)
			_, _ = w.Write([]byte(strings.Repeat("x", 1000)))
			return
		}
		switch r.URL.Path {
		case "/apply-template":
			_ = json.NewEncoder(w).Encode(map[string]any{"prompt": "<|user|>" + body["messages"].([]any)[0].(map[string]any)["content"].(string)})
		case "/tokenize":
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": []int{len(body["content"].(string)), 7}})
		case "/detokenize":
			_ = json.NewEncoder(w).Encode(map[string]any{"content": "AB"})
		case "/completion":
			n := int(body["n_probs"].(float64))
			f.nProbs = append(f.nProbs, n)
			f.cache = append(f.cache, body["cache_prompt"])
			// Token i has logprob -i/10: ids ranked by id.
			var top []map[string]any
			for i := 0; i < min(n, f.vocab); i++ {
				top = append(top, map[string]any{"id": i, "token": "t", "bytes": []int{116}, "logprob": -float64(i) / 10})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"completion_probabilities": []any{map[string]any{"top_logprobs": top}}})
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}

func newFake(t *testing.T, f *fakeServer) (*backend.HTTP, string) {
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	return backend.NewHTTP(srv.URL+"/", backend.HTTPOptions{APIKey: "sekret", NProbs: 4}), srv.URL
}

// With CachePrompt the first call keeps the server's prompt cache; a repeat with a larger
// n_probs still sends cache_prompt=false (the cached prompt would be decoded one token again).
func TestHTTPCachePromptOnlyOnTheFirstCall(t *testing.T) {
	f := &fakeServer{vocab: 100}
	srv := httptest.NewServer(f.handler(t))
	t.Cleanup(srv.Close)
	h := backend.NewHTTP(srv.URL, backend.HTTPOptions{APIKey: "sekret", NProbs: 4, CachePrompt: true})
	_, err := h.NextToken(context.Background(), []int32{5, 6, 7}, []int32{1, 20})
	require.NoError(t, err)
	require.Len(t, f.cache, 2)
	assert.Nil(t, f.cache[0], "not sent: the server's default, cache_prompt=true")
	assert.Equal(t, false, f.cache[1])
}

func TestHTTPCallsTheSeedsEndpoints(t *testing.T) {
	f := &fakeServer{vocab: 100}
	h, _ := newFake(t, f)
	ctx := context.Background()

	text, err := h.Render(ctx, []contract.ChatMessage{{Role: "user", Content: "hi"}})
	require.NoError(t, err)
	assert.Equal(t, "<|user|>hi", text)
	assert.Equal(t, map[string]any{"enable_thinking": false}, f.lastBody["chat_template_kwargs"], "the seed's default kwargs")
	assert.Equal(t, "Bearer sekret", f.auth.Load())

	toks, err := h.Tokenize(ctx, "abc", true)
	require.NoError(t, err)
	assert.Equal(t, []int32{3, 7}, toks)
	assert.Equal(t, false, f.lastBody["add_special"], "the template already emits BOS")
	assert.Equal(t, true, f.lastBody["parse_special"])

	s, err := h.Detokenize(ctx, []int32{1, 2})
	require.NoError(t, err)
	assert.Equal(t, "AB", s)
	assert.Equal(t, "http://"+strings.TrimPrefix(h.Name(), "http://"), h.Name())
	assert.Equal(t, backend.RendererServer, h.Renderer())
}

func TestNextTokenRaisesNProbsUntilEveryIDIsThere(t *testing.T) {
	cases := []struct {
		name      string
		vocab     int
		ids       []int32
		wantCalls []int
		missing   []int32
	}{
		{"in the first top-4", 100, []int32{0, 3}, []int{4}, nil},
		{"needs one raise", 100, []int32{1, 20}, []int{4, 32}, nil},
		{"needs two raises", 1000, []int32{200}, []int{4, 32, 256}, nil},
		{"not in the vocabulary: reported, not invented", 50, []int32{2, 70}, []int{4, 32, 256}, []int32{70}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeServer{vocab: tc.vocab}
			h, _ := newFake(t, f)
			r, err := h.NextToken(context.Background(), []int32{5, 6, 7}, tc.ids)
			assert.Equal(t, tc.wantCalls, f.nProbs)
			require.NotEmpty(t, f.cache)
			for _, c := range f.cache {
				assert.Equal(t, false, c, "every call decodes the whole prompt, as the in-process runtime decodes it alone")
			}
			if tc.missing != nil {
				var me *backend.MissingTokensError
				require.ErrorAs(t, err, &me)
				assert.Equal(t, tc.missing, me.IDs)
				assert.ErrorIs(t, err, backend.ErrMissingTokens)
				return
			}
			require.NoError(t, err)
			assert.Nil(t, r.Logits, "the server gives no raw logits")
			for i, id := range tc.ids {
				assert.InDelta(t, -float64(id)/10, r.Logprobs[i], 1e-12)
			}
			assert.Equal(t, []any{5.0, 6.0, 7.0}, f.lastBody["prompt"], "the prompt goes as token ids")
			assert.Equal(t, 1.0, f.lastBody["n_predict"])
		})
	}
}

func TestHTTPErrorsNameTheURLStatusAndBody(t *testing.T) {
	f := &fakeServer{vocab: 10, failPaths: map[string]int{"/tokenize": http.StatusServiceUnavailable}}
	h, base := newFake(t, f)
	_, err := h.Tokenize(context.Background(), "x", true)
	var he *backend.HTTPError
	require.ErrorAs(t, err, &he)
	assert.ErrorIs(t, err, backend.ErrHTTP)
	assert.Equal(t, base+"/tokenize", he.URL)
	assert.Equal(t, http.StatusServiceUnavailable, he.Status)
	assert.Equal(t, strings.Repeat("x", 400)+"…", he.Body, "truncated to 400 characters")
	assert.Contains(t, err.Error(), "POST "+base+"/tokenize returned HTTP 503")

	dead := backend.NewHTTP("http://127.0.0.1:1", backend.HTTPOptions{})
	_, err = dead.Render(context.Background(), nil)
	require.ErrorAs(t, err, &he)
	assert.Zero(t, he.Status)
	assert.Contains(t, err.Error(), "http://127.0.0.1:1/apply-template")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = h.Detokenize(ctx, []int32{1})
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
}
