package systemone_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/systemone"
)

// A Request, a Response and a NamedAnswer marshal alike as values and pointers, names kept
// (before, the value forms lost them: MarshalJSON had pointer receivers, and NamedAnswer took
// Answer's, which writes no name).
func TestWireValuesMarshalWithTheirNames(t *testing.T) {
	resp := systemone.Response{Model: "m.gguf", Usage: systemone.Usage{InputTokens: 3, OutputTokens: 1},
		Answers: []systemone.NamedAnswer{{Name: "billing", Answer: systemone.Answer{Type: "noul", Noul: 0.25}}}}
	want := `{"model":"m.gguf","answers":{"billing":{"type":"noul","noul":0.25}},"usage":{"input_tokens":3,"output_tokens":1}}`
	for _, v := range []any{resp, &resp} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.JSONEq(t, want, string(b))
	}
	b, err := json.Marshal(resp.Answers[0])
	require.NoError(t, err)
	assert.JSONEq(t, `{"name":"billing","type":"noul","noul":0.25}`, string(b))
	var back systemone.NamedAnswer
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, resp.Answers[0], back)

	req := systemone.Request{Model: "jev-latest", State: "s", Questions: []systemone.Named{{Name: "q", Question: gojev.Noul{Instructions: "?"}}}}
	for _, v := range []any{req, &req} {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		assert.JSONEq(t, `{"model":"jev-latest","state":"s","questions":{"q":{"type":"noul","instructions":"?"}}}`, string(b))
	}
}

// The client reports an unknown model only when the server says so: a 404 from a wrong base
// URL is an *APIError (before, every 404 was ErrUnknownModel).
func TestClientTellsAWrongURLFromAnUnknownModel(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler()) // "404 page not found", text/plain
	defer plain.Close()
	fastapi := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"detail": "Not Found"}`))
	}))
	defer fastapi.Close()
	req := &systemone.Request{Model: "jev-latest", State: "s", Questions: []systemone.Named{{Name: "q", Question: gojev.Noul{Instructions: "?"}}}}
	for _, srv := range []*httptest.Server{plain, fastapi} {
		_, err := (&systemone.Client{BaseURL: srv.URL}).Ask(context.Background(), req)
		var ae *systemone.APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, http.StatusNotFound, ae.Status)
		assert.NotErrorIs(t, err, systemone.ErrUnknownModel)
	}
	gojevSrv := scriptedServer(t, systemone.Config{}, nil)
	bad := *req
	bad.Model = "gpt-4o"
	_, err := (&systemone.Client{BaseURL: gojevSrv.URL}).Ask(context.Background(), &bad)
	assert.ErrorIs(t, err, systemone.ErrUnknownModel)
	_, err = (&systemone.Client{BaseURL: gojevSrv.URL + "/v1"}).Ask(context.Background(), req)
	var ae *systemone.APIError
	require.ErrorAs(t, err, &ae, "a base URL ending in /v1: the path 404s")
	assert.NotErrorIs(t, err, systemone.ErrUnknownModel)
}
