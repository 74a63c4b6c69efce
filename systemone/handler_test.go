package systemone_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/systemone"
)

// scriptedServer serves the API over a model-free runtime whose letters score the option
// descriptions in scores: no model, exact numbers.
func scriptedServer(t *testing.T, cfg systemone.Config, scores map[string]float64) *httptest.Server {
	t.Helper()
	srv, _, _ := serverOn(t, cfg, &backendtest.Scripted{Scores: scores}, gojev.Options{})
	return srv
}

// serverOn serves the API over a Decider on rt, the model named scripted.gguf, logging nowhere.
func serverOn(t *testing.T, cfg systemone.Config, rt *backendtest.Scripted, opts gojev.Options) (*httptest.Server, *systemone.Handler, *gojev.Decider) {
	t.Helper()
	d, err := gojev.New(context.Background(), rt, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = d.Close() })
	cfg.Decider = d
	if cfg.Model.Name == "" {
		cfg.Model = systemone.Model{Name: "scripted.gguf", Description: "a scripted runtime", ReleaseDate: "2026-12-06"}
	}
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	h, err := systemone.NewHandler(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, h, d
}

// post sends body to /v1/systemone as JSON with headers ("Authorization", "Content-Encoding")
// and returns the status and the decoded JSON body.
func post(t *testing.T, srv *httptest.Server, body []byte, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/systemone", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

const ticketRequest = `{"model": "jev-latest", "state": {"message": "charged twice"}, "questions": {
  "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Charges.", "shipping": "Parcels.", "account": null}},
  "urgency": {"type": "score", "instructions": "How urgent?", "criteria": ["Can wait.", "This week.", {"level": "today"}]}}}`

// The answers over a scripted runtime, to the digit: a choice's probabilities are the softmax
// of its letters' scores, its confidence the margin over uniform, a score's value Σ i·pᵢ and its
// legend the levels as sent.
func TestAnswersAreExact(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{}, map[string]float64{"Charges.": 2, "This week.": 1, `{"level": "today"}`: 1})
	status, body := post(t, srv, []byte(ticketRequest))
	require.Equal(t, http.StatusOK, status, body)
	answers := body["answers"].(map[string]any)
	team := answers["team"].(map[string]any)
	e2 := math.Exp(2)
	assert.Equal(t, "billing", team["choice"])
	probs := team["probabilities"].(map[string]any)
	assert.InDelta(t, e2/(e2+2), probs["billing"], 1e-12)
	assert.InDelta(t, 1/(e2+2), probs["account"], 1e-12, "a choice without a description is read by its name")
	assert.InDelta(t, (e2/(e2+2)-1.0/3)/(1-1.0/3), team["confidence"], 1e-12)
	assert.Equal(t, "direct-options-v1", team["prompt_version"])
	assert.Len(t, team["prompt_sha256"], 64)
	assert.ElementsMatch(t, []string{"type", "choice", "confidence", "probabilities", "prompt_version", "prompt_sha256"}, keys(team))

	urgency := answers["urgency"].(map[string]any)
	e1 := math.E
	p := []float64{1 / (1 + 2*e1), e1 / (1 + 2*e1), e1 / (1 + 2*e1)}
	assert.InDelta(t, p[1]+2*p[2], urgency["score"], 1e-12)
	assert.Equal(t, map[string]any{"0": "Can wait.", "1": "This week.", "2": map[string]any{"level": "today"}}, urgency["legend"])
	assert.InDelta(t, p[0], urgency["probabilities"].(map[string]any)["0"], 1e-12)
	assert.InDelta(t, (p[1]-1.0/3)/(1-1.0/3), urgency["confidence"], 1e-12)
	assert.ElementsMatch(t, []string{"type", "score", "confidence", "legend", "probabilities", "prompt_version", "prompt_sha256"}, keys(urgency))

	usage := body["usage"].(map[string]any)
	assert.Equal(t, 3.0, usage["output_tokens"], "one answer token a prompt: the choice's, and the score's rubric read listed and reversed")
	assert.Greater(t, usage["input_tokens"], 100.0)
	assert.Equal(t, "scripted.gguf", body["model"])
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// Bodies compressed with zstd (as the official SDK sends bodies of 1 KiB and more) and gzip are
// read; the size limit applies after decompressing; another encoding is a 415.
func TestCompressedBodies(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{MaxBodyBytes: 4 << 10}, nil)
	var z bytes.Buffer
	zw, err := zstd.NewWriter(&z)
	require.NoError(t, err)
	_, _ = zw.Write([]byte(ticketRequest))
	require.NoError(t, zw.Close())
	status, body := post(t, srv, z.Bytes(), "Content-Encoding", "zstd")
	assert.Equal(t, http.StatusOK, status, body)

	var g bytes.Buffer
	gw := gzip.NewWriter(&g)
	_, _ = gw.Write([]byte(ticketRequest))
	require.NoError(t, gw.Close())
	status, body = post(t, srv, g.Bytes(), "Content-Encoding", "gzip")
	assert.Equal(t, http.StatusOK, status, body)

	big := []byte(`{"model": "jev-latest", "state": "` + strings.Repeat("a", 8<<10) + `", "questions": {"q": {"type": "noul", "instructions": "?"}}}`)
	z.Reset()
	zw.Reset(&z)
	_, _ = zw.Write(big)
	require.NoError(t, zw.Close())
	require.Less(t, z.Len(), 1<<10, "compresses far below the limit")
	status, body = post(t, srv, z.Bytes(), "Content-Encoding", "zstd")
	assert.Equal(t, http.StatusRequestEntityTooLarge, status, body)
	assert.Contains(t, body["detail"], "after decompressing")
	status, _ = post(t, srv, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status)

	status, body = post(t, srv, []byte(ticketRequest), "Content-Encoding", "br")
	assert.Equal(t, http.StatusUnsupportedMediaType, status, body)
}

// Requests the API refuses are 422s with FastAPI's detail, never 5xx.
func TestValidationErrors(t *testing.T) {
	srv := scriptedServer(t, systemone.Config{MaxQuestions: 2}, nil)
	for _, tc := range []struct {
		name, body string
		loc        []any
		typ        string
	}{
		{"not JSON", `{"model": `, []any{"body", 10.0}, "json_invalid"},
		{"not an object", `[1]`, []any{"body"}, "model_attributes_type"},
		{"no state", `{"model": "jev-latest", "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body", "state"}, "missing"},
		{"no model", `{"state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body", "model"}, "missing"},
		{"a number state", `{"model": "jev-latest", "state": 3, "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body", "state"}, "state_type"},
		{"no questions", `{"model": "jev-latest", "state": "s", "questions": {}}`, []any{"body", "questions"}, "too_short"},
		{"an unknown type", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "rank"}}}`, []any{"body", "questions", "q"}, "union_tag_invalid"},
		{"no type", `{"model": "jev-latest", "state": "s", "questions": {"q": {"instructions": "?"}}}`, []any{"body", "questions", "q"}, "union_tag_not_found"},
		{"box", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "box", "instructions": "logo"}}}`, []any{"body", "questions", "q", "box"}, "unsupported"},
		{"assets", `{"model": "jev-latest", "state": "s", "assets": {"a": {"type": "image"}}, "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body", "assets"}, "unsupported"},
		{"score without criteria", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "score"}}}`, []any{"body", "questions", "q", "score", "criteria"}, "missing"},
		{"empty score", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "score", "criteria": []}}}`, []any{"body", "questions", "q", "score", "criteria"}, "too_short"},
		{"choice criteria a list", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "choice", "criteria": ["a"]}}}`, []any{"body", "questions", "q", "choice", "criteria"}, "dict_type"},
		{"a number instruction", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "noul", "instructions": 1}}}`, []any{"body", "questions", "q", "noul", "instructions"}, "instructions_type"},
		{"an empty noul", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "noul"}}}`, []any{"body", "questions", "q", "noul", "instructions"}, "missing"},
		{"NaN", `{"model": "jev-latest", "state": {"x": NaN}, "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body"}, "finite_number"},
		{"too many questions", `{"model": "jev-latest", "state": "s", "questions": {"a": {"type": "noul", "instructions": "?"}, "b": {"type": "noul", "instructions": "?"}, "c": {"type": "noul", "instructions": "?"}}}`, []any{"body", "questions"}, "too_long"},
		{"a noul the model cannot answer", `{"model": "jev-latest", "state": "s", "questions": {"q": {"type": "noul", "instructions": "?"}}}`, []any{"body", "questions", "q", "noul"}, "unsupported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := post(t, srv, []byte(tc.body))
			require.Equal(t, http.StatusUnprocessableEntity, status, body)
			detail := body["detail"].([]any)
			require.NotEmpty(t, detail)
			var found bool
			for _, d := range detail {
				e := d.(map[string]any)
				assert.NotEmpty(t, e["msg"])
				if assert.ObjectsAreEqual(tc.loc, e["loc"]) && e["type"] == tc.typ {
					found = true
				}
			}
			assert.True(t, found, "want loc %v type %s in %v", tc.loc, tc.typ, detail)
		})
	}
}

// Keys: without any, every request is served; with keys, a wrong or missing one is a 401 (the
// health check needs none); an unknown model is a 404.
func TestKeysAndModels(t *testing.T) {
	open := scriptedServer(t, systemone.Config{}, nil)
	status, _ := post(t, open, []byte(ticketRequest))
	assert.Equal(t, http.StatusOK, status, "no keys: no key needed")
	status, _ = post(t, open, []byte(ticketRequest), "Authorization", "Bearer anything")
	assert.Equal(t, http.StatusOK, status, "no keys: any key accepted (the official client sends one)")

	srv := scriptedServer(t, systemone.Config{APIKeys: []string{"k1", "k2"}}, nil)
	status, body := post(t, srv, []byte(ticketRequest))
	assert.Equal(t, http.StatusUnauthorized, status, body)
	status, _ = post(t, srv, []byte(ticketRequest), "Authorization", "Bearer k3")
	assert.Equal(t, http.StatusUnauthorized, status)
	status, _ = post(t, srv, []byte(ticketRequest), "Authorization", "Bearer k2")
	assert.Equal(t, http.StatusOK, status)
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	c := &systemone.Client{BaseURL: srv.URL, APIKey: "k1"}
	models, err := c.Models(context.Background())
	require.NoError(t, err)
	var names []string
	for _, m := range models {
		names = append(names, m.Name)
		assert.Equal(t, "2026-12-06", m.ReleaseDate)
	}
	assert.Equal(t, []string{"scripted.gguf", "jev-latest", "jev-1.13", "jev-1.13.0"}, names, "the model, then its aliases")
	assert.Equal(t, "an alias of scripted.gguf: a scripted runtime", models[1].Description)
	_, err = (&systemone.Client{BaseURL: srv.URL, APIKey: "nope"}).Models(context.Background())
	var ae *systemone.APIError
	require.ErrorAs(t, err, &ae)
	assert.Equal(t, http.StatusUnauthorized, ae.Status)

	status, body = post(t, srv, []byte(strings.Replace(ticketRequest, "jev-latest", "other.gguf", 1)), "Authorization", "Bearer k1")
	assert.Equal(t, http.StatusNotFound, status, body)
	status, _ = post(t, srv, []byte(strings.Replace(ticketRequest, "jev-latest", "scripted.gguf", 1)), "Authorization", "Bearer k1")
	assert.Equal(t, http.StatusOK, status, "the model's own name")
}

// The Go client and the in-process Asker give the same answers: a program switches between
// them behind Asker.
func TestClientAndLocalAgree(t *testing.T) {
	scores := map[string]float64{"Charges.": 1.5}
	srv := scriptedServer(t, systemone.Config{}, scores)
	req, err := systemone.ParseRequest([]byte(ticketRequest))
	require.NoError(t, err)
	d, err := gojev.New(context.Background(), &backendtest.Scripted{Scores: scores}, gojev.Options{})
	require.NoError(t, err)
	defer d.Close()
	var askers = []systemone.Asker{&systemone.Client{BaseURL: srv.URL}, &systemone.Local{Decider: d, Model: "scripted.gguf"}}
	var got [2]*systemone.Response
	for i, a := range askers {
		got[i], err = a.Ask(context.Background(), req)
		require.NoError(t, err)
	}
	assert.Equal(t, got[1], got[0])
	team, ok := got[0].Get("team")
	require.True(t, ok)
	assert.Equal(t, "billing", team.Choice)

	bad := *req
	bad.Model = "other"
	for _, a := range askers {
		_, err := a.Ask(context.Background(), &bad)
		assert.ErrorIs(t, err, systemone.ErrUnknownModel)
	}
	noul := &systemone.Request{Model: systemone.DefaultModel, State: "s", Questions: []systemone.Named{{Name: "q", Question: gojev.Noul{Instructions: "?"}}}}
	for _, a := range askers {
		_, err := a.Ask(context.Background(), noul)
		var ve systemone.ValidationErrors
		require.ErrorAs(t, err, &ve, "the scripted runtime has no single-token yes")
		assert.Equal(t, "unsupported", ve[0].Type)
	}
}
