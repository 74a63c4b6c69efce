package systemone_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/systemone"
)

// do sends one request and returns its response, its body read.
func do(t *testing.T, srv *httptest.Server, method, path, body string, headers ...string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i] == "Host" {
			req.Host = headers[i+1]
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

const jsonType = "application/json"

// Without keys the server answers only requests addressed to a loopback name, and a browser
// page of another origin cannot call it (before: any Host and any Origin were answered, so any
// web page the user opened could drive the model, and with DNS rebinding read the answers).
// Its own origin is served; --allowed-origins lets a page in, with CORS headers and preflights.
func TestHostAndOriginGuards(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{}, nil)
	u, err := url.Parse(srv.URL)
	require.NoError(t, err)
	for _, tc := range []struct {
		name    string
		headers []string
		want    int
	}{
		{"the test's own loopback address", nil, http.StatusOK},
		{"localhost", []string{"Host", "localhost:" + u.Port()}, http.StatusOK},
		{"a name under .localhost", []string{"Host", "app.localhost:" + u.Port()}, http.StatusOK},
		{"IPv6 loopback", []string{"Host", "[::1]:" + u.Port()}, http.StatusOK},
		{"a DNS-rebinding name", []string{"Host", "attacker.example:" + u.Port()}, http.StatusForbidden},
		{"a LAN address", []string{"Host", "192.168.1.20:" + u.Port()}, http.StatusForbidden},
		{"a foreign origin", []string{"Origin", "https://attacker.example"}, http.StatusForbidden},
		{"a sandboxed page", []string{"Origin", "null"}, http.StatusForbidden},
		{"the server's own origin", []string{"Origin", "http://" + u.Host}, http.StatusOK},
		{"through a proxy (X-Forwarded-For)", []string{"X-Forwarded-For", "203.0.113.7"}, http.StatusForbidden},
		{"through a proxy (Forwarded)", []string{"Forwarded", "for=203.0.113.7"}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := do(t, srv, http.MethodPost, "/v1/systemone", ticketRequest, append([]string{"Content-Type", jsonType}, tc.headers...)...)
			assert.Equal(t, tc.want, resp.StatusCode, body)
			var detail map[string]any
			assert.NoError(t, json.Unmarshal([]byte(body), &detail), "a JSON body")
		})
	}
	resp, _ := do(t, srv, http.MethodGet, "/healthz", "", "Host", "attacker.example")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "probes answer any Host")

	keyed := scriptedServer(t, systemone.Config{APIKeys: []string{"k"}, AllowedOrigins: []string{"https://app.example"}}, nil)
	resp, body := do(t, keyed, http.MethodPost, "/v1/systemone", ticketRequest, "Content-Type", jsonType, "Authorization", "Bearer k",
		"Host", "gojev.internal:443", "X-Forwarded-For", "203.0.113.7")
	assert.Equal(t, http.StatusOK, resp.StatusCode, "with keys, any Host and a proxy in front: %s", body)
	resp, _ = do(t, keyed, http.MethodPost, "/v1/systemone", ticketRequest, "Content-Type", jsonType, "Authorization", "Bearer k", "Origin", "https://attacker.example")
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "with keys, a foreign origin still refused")
	resp, body = do(t, keyed, http.MethodPost, "/v1/systemone", ticketRequest, "Content-Type", jsonType, "Authorization", "Bearer k", "Origin", "https://app.example")
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Equal(t, "https://app.example", resp.Header.Get("Access-Control-Allow-Origin"))
	resp, _ = do(t, keyed, http.MethodOptions, "/v1/systemone", "", "Origin", "https://app.example", "Access-Control-Request-Method", "POST")
	assert.Equal(t, http.StatusNoContent, resp.StatusCode, "a preflight needs no key")
	assert.Contains(t, resp.Header.Get("Access-Control-Allow-Headers"), "Authorization")
	assert.Contains(t, resp.Header.Get("Access-Control-Expose-Headers"), "Retry-After")
}

// A body that is not JSON is a 415: a web page can send a cross-site text/plain or form body
// without a preflight, never JSON (before, a text/plain body was answered).
func TestContentTypeMustBeJSON(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{}, nil)
	for ct, want := range map[string]int{
		"text/plain":                        http.StatusUnsupportedMediaType,
		"application/x-www-form-urlencoded": http.StatusUnsupportedMediaType,
		"multipart/form-data; boundary=x":   http.StatusUnsupportedMediaType,
		"":                                  http.StatusUnsupportedMediaType,
		"application/json":                  http.StatusOK,
		"application/json; charset=utf-8":   http.StatusOK,
		"application/vnd.api+json":          http.StatusOK,
	} {
		resp, body := do(t, srv, http.MethodPost, "/v1/systemone", ticketRequest, "Content-Type", ct)
		assert.Equal(t, want, resp.StatusCode, "%q: %s", ct, body)
	}
}

// "Bearer" is matched in any case (RFC 7235 §2.1); a key in another scheme is refused.
func TestBearerSchemeInAnyCase(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{APIKeys: []string{"k1"}}, nil)
	for auth, want := range map[string]int{
		"Bearer k1": http.StatusOK, "bearer k1": http.StatusOK, "BEARER  k1": http.StatusOK,
		"Basic k1": http.StatusUnauthorized, "Bearer k2": http.StatusUnauthorized, "k1": http.StatusUnauthorized,
	} {
		resp, body := do(t, srv, http.MethodPost, "/v1/systemone", ticketRequest, "Content-Type", jsonType, "Authorization", auth)
		assert.Equal(t, want, resp.StatusCode, "%q: %s", auth, body)
	}
}

// Every path answers JSON, an unknown one and a wrong method included; the request id is the
// client's X-Request-Id when well formed, echoed in both id headers.
func TestJSONErrorsAndRequestIDs(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{}, nil)
	resp, body := do(t, srv, http.MethodPost, "/systemone", ticketRequest, "Content-Type", jsonType)
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, jsonType, resp.Header.Get("Content-Type"))
	assert.Contains(t, body, `"detail"`)
	assert.Contains(t, body, "/v1")
	resp, body = do(t, srv, http.MethodDelete, "/v1/models", "")
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "GET", resp.Header.Get("Allow"))
	assert.Contains(t, body, `"detail"`)
	resp, _ = do(t, srv, http.MethodHead, "/healthz", "")
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	resp, _ = do(t, srv, http.MethodGet, "/v1/models", "", "X-Request-Id", "trace-42.a")
	assert.Equal(t, "trace-42.a", resp.Header.Get("X-Request-Id"))
	assert.Equal(t, "trace-42.a", resp.Header.Get("X-TypeSafe-Request-Id"))
	resp, _ = do(t, srv, http.MethodGet, "/v1/models", "", "X-Request-Id", "bad id\twith tab")
	assert.Len(t, resp.Header.Get("X-Request-Id"), 16, "a malformed id is replaced")
	assert.NotContains(t, resp.Header.Get("X-Request-Id"), "bad")
}

// The model names System One clients send by default are answered (jevkit's tools send
// jev-1.13.0: before, a 404); the answer names the model that really answered.
func TestModelAliases(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{Aliases: []string{"team-judge"}}, nil)
	for model, want := range map[string]int{"jev-latest": 200, "jev-1.13.0": 200, "jev-1.13": 200, "jev-2": 200, "team-judge": 200,
		"scripted.gguf": 200, "gpt-4o": 404, "jev-latest-2": 404} {
		status, body := post(t, srv, []byte(strings.Replace(ticketRequest, "jev-latest", model, 1)))
		assert.Equal(t, want, status, "%s: %v", model, body)
		if status == http.StatusOK {
			assert.Equal(t, "scripted.gguf", body["model"], "%s: the model that answered", model)
		}
	}
	_, body := do(t, srv, http.MethodGet, "/v1/models", "")
	assert.Contains(t, body, `"team-judge"`)
	assert.Contains(t, body, `"jev-1.13.0"`)
}
