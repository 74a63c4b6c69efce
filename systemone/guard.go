package systemone

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// The checks a request passes before it reaches an endpoint: who may call (keys, Host,
// Origin), what it may send (Content-Type), and its request id.

// loopbackHost reports whether a Host header (a name or address, with or without a port)
// names this machine's loopback interface: localhost, a name under .localhost (RFC 6761), or a
// loopback address. A DNS-rebinding page reaches a loopback server under its own name, which
// this refuses.
func loopbackHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// proxyHeaders are the headers a reverse proxy adds (RFC 7239's Forwarded, and the de facto
// ones): a keyless server refuses a request that carries one, since a proxy in front of it
// would pass every caller's request to its loopback address.
var proxyHeaders = []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto", "X-Real-Ip", "Via"}

// proxied is the first proxy header r carries ("" for none).
func proxied(r *http.Request) string {
	for _, h := range proxyHeaders {
		if r.Header.Get(h) != "" {
			return h
		}
	}
	return ""
}

// originAllowed reports whether a request's Origin header may call: none sent (not a browser,
// or a same-origin GET), the server's own origin (its host and port are the request's Host),
// or one of allowed ("*" allows any). A browser page of another site is refused, and cannot
// drive the model.
func originAllowed(origin, host string, allowed []string) bool {
	if origin == "" {
		return true
	}
	if slices.Contains(allowed, "*") || slices.Contains(allowed, strings.TrimSuffix(origin, "/")) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // "null" (a sandboxed page, a file), or garbage
	}
	return strings.EqualFold(withPort(u.Host, u.Scheme), withPort(host, u.Scheme))
}

// withPort is host with its scheme's default port when it names none.
func withPort(host, scheme string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	port := "80"
	if scheme == "https" {
		port = "443"
	}
	return net.JoinHostPort(strings.TrimSuffix(strings.TrimPrefix(host, "["), "]"), port)
}

// corsHeaders answers a cross-origin caller that --allowed-origins lets in: the origin echoed,
// and what its page may send and read.
func corsHeaders(w http.ResponseWriter, origin string) {
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Allow-Methods", "GET, POST, OPTIONS")
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, Content-Encoding, X-Request-Id, X-Request-Timeout, X-TypeSafe-SDK, X-TypeSafe-Runtime, X-TypeSafe-Retry-Count")
	h.Set("Access-Control-Expose-Headers", "Retry-After, Retry-After-Ms, X-Request-Id, X-TypeSafe-Request-Id")
	h.Set("Access-Control-Max-Age", "600")
}

// bearer returns the key of an "Authorization: Bearer <key>" header, the scheme matched in
// any case (RFC 7235 §2.1), and whether there was one.
func bearer(header string) (string, bool) {
	scheme, key, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(key), true
}

// keyAccepted reports whether key is one of keys, comparing in constant time.
func keyAccepted(key string, keys []string) bool {
	ok := 0
	for _, k := range keys {
		ok |= subtle.ConstantTimeCompare([]byte(key), []byte(k))
	}
	return ok == 1
}

// jsonContent reports whether a Content-Type is JSON: application/json or application/*+json,
// with any parameters (charset). A browser can send a cross-site form or text/plain body
// without asking first; it cannot send JSON without a CORS preflight.
func jsonContent(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

// idPattern is what a request id taken from a client may be: printable and short, so that it
// cannot forge log lines or headers.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._:/+=-]{1,128}$`)

// requestID is the request's id: the client's X-Request-Id (or X-TypeSafe-Request-Id) when it
// sends a well-formed one, else a new random one.
func requestID(r *http.Request) string {
	for _, h := range []string{"X-Request-Id", "X-TypeSafe-Request-Id"} {
		if id := r.Header.Get(h); idPattern.MatchString(id) {
			return id
		}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
