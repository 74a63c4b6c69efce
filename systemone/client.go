package systemone

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Client asks a System One server over HTTP (a jev serve, or any server of the API): POST
// /v1/systemone and GET /v1/models, with a bearer key. Safe for concurrent use.
type Client struct {
	// BaseURL is the server's root, such as "http://127.0.0.1:8080" (no trailing /v1).
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when not empty.
	APIKey string
	// HTTP is the client that sends the requests (nil: http.DefaultClient). Set its Timeout,
	// or give each call a deadline through its context.
	HTTP *http.Client
}

var _ Asker = (*Client)(nil)

// APIError is a failed HTTP response other than a validation error: its status and the
// server's message (the body's "detail" when it has one).
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string { return fmt.Sprintf("systemone: HTTP %d: %s", e.Status, e.Message) }

// Ask posts the request to /v1/systemone. Errors: ValidationErrors for a 422, an error wrapping
// ErrUnknownModel for a 404 whose detail says the model is unknown, *APIError for any other
// failure status (a 404 from a wrong BaseURL among them), and the transport's errors.
func (c *Client) Ask(ctx context.Context, req *Request) (*Response, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	var resp Response
	if err := c.do(ctx, http.MethodPost, "/v1/systemone", body, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Models lists the models the server serves (GET /v1/models).
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	var list ModelList
	if err := c.do(ctx, http.MethodGet, "/v1/models", nil, &list); err != nil {
		return nil, err
	}
	return list.Models, nil
}

func (c *Client) do(ctx context.Context, method, path string, body []byte, out any) error {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, r)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("systemone: %s %s: %w", method, path, err)
		}
		return nil
	}
	var detail struct {
		Detail json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(data, &detail)
	if resp.StatusCode == http.StatusUnprocessableEntity {
		var ve ValidationErrors
		if json.Unmarshal(detail.Detail, &ve) == nil && len(ve) > 0 {
			return ve
		}
	}
	msg := strings.TrimSpace(string(data))
	var s string
	if json.Unmarshal(detail.Detail, &s) == nil {
		msg = s
	}
	if resp.StatusCode == http.StatusNotFound && path == "/v1/systemone" && unknownModel(detail.Detail) {
		return fmt.Errorf("%w: %s", ErrUnknownModel, msg)
	}
	return &APIError{Status: resp.StatusCode, Message: msg}
}

// unknownModel reports whether a 404's JSON detail says the model is unknown ("unknown model",
// as gojev writes it, or "model ... not found"), not that the path is: a wrong base URL's 404
// ("404 page not found", or FastAPI's {"detail": "Not Found"}) is an *APIError.
func unknownModel(detail json.RawMessage) bool {
	var s string
	if json.Unmarshal(detail, &s) != nil {
		return false
	}
	s = strings.ToLower(s)
	return strings.Contains(s, "unknown model") || (strings.Contains(s, "model") && strings.Contains(s, "not found"))
}
