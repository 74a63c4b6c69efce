// Package pyjinja runs the reference renderer, Python Jinja2 configured as Hugging Face
// transformers configures it (jinja2_render.py, embedded), for the corpus cross-checks.
package pyjinja

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed jinja2_render.py
var script []byte

// Template is one template to render.
type Template struct {
	Name   string `json:"name"`
	Source string `json:"source"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one rendering request; see jinja2_render.py's docstring.
type Request struct {
	Templates           []Template        `json:"templates"`
	Messages            []Message         `json:"messages"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	BOSToken            string            `json:"bos_token"`
	EOSToken            string            `json:"eos_token"`
	SpecialTokens       map[string]string `json:"special_tokens,omitempty"`
	Kwargs              map[string]any    `json:"kwargs"`
	Now                 string            `json:"now"` // naive wall clock, "2006-01-02T15:04:05"
	OmitTools           bool              `json:"omit_tools"`
}

// Result is one template's outcome: Output, or Error and ErrorType when Python raised.
type Result struct {
	Name      string  `json:"name"`
	Output    *string `json:"output"`
	Error     *string `json:"error"`
	ErrorType *string `json:"error_type"`
}

// Render runs python (a python3 with jinja2 installed) on the request. Errors: python missing
// or failing (its stderr is in the error), or an unexpected response.
func Render(ctx context.Context, python string, req Request) ([]Result, error) {
	dir, err := os.MkdirTemp("", "pyjinja")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "jinja2_render.py")
	if err := os.WriteFile(path, script, 0o600); err != nil {
		return nil, err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, python, path)
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("pyjinja: %s (needs python3 with jinja2: pip install jinja2): %w: %s", python, err, stderr.String())
	}
	var resp struct{ Results []Result }
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("pyjinja: unexpected response: %w", err)
	}
	if len(resp.Results) != len(req.Templates) {
		return nil, fmt.Errorf("pyjinja: %d results for %d templates", len(resp.Results), len(req.Templates))
	}
	return resp.Results, nil
}
