package render_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/internal/pyjinja"
	"github.com/gojev/gojev/internal/testenv"
	"github.com/gojev/gojev/render"
)

// decisionMessages are the direct contract's two messages for a Banking77-like row.
var decisionMessages = []render.Message{
	{Role: "system", Content: "Apply the supplied criterion to the supplied evidence. Choose exactly one listed option. Respond with only its uppercase letter, with no explanation or reasoning."},
	{Role: "user", Content: `{"evidence": {"message": "I was charged twice for one purchase \u2014 please refund"}, "criterion": "Which intent does this message express?", "options": [{"letter": "A", "description": "card_payment_fee_charged"}, {"letter": "B", "description": "transaction_charged_twice"}]}`},
}

// knownLenient lists the templates Python Jinja2 refuses to render with the decision messages
// but the Go engine renders: Jinja2's Undefined raises when an undefined variable is
// serialised, the Go engine prints it as empty. Checked exactly, so a fix shows up too.
var knownLenient = map[string]string{
	"fireworks-ai-llama-3-firefunction-v2.jinja": "UndefinedError on the undefined 'functions' variable (a tool-calling template with no tools)",
}

// TestCorpusMatchesPythonJinja2 renders the decision messages through every chat template
// shipped with the pinned llama.cpp (models/templates/*.jinja) in Go and in Python Jinja2
// configured as transformers configures it, and compares the bytes.
func TestCorpusMatchesPythonJinja2(t *testing.T) {
	python := testenv.Python3(t)
	files, err := filepath.Glob(filepath.Join(testenv.LlamaCppDir(t), "models", "templates", "*.jinja"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var tpls []pyjinja.Template
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		tpls = append(tpls, pyjinja.Template{Name: filepath.Base(f), Source: string(b)})
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var msgs []pyjinja.Message
	for _, m := range decisionMessages {
		msgs = append(msgs, pyjinja.Message{Role: m.Role, Content: m.Content})
	}
	results, err := pyjinja.Render(context.Background(), python, pyjinja.Request{
		Templates: tpls, Messages: msgs, AddGenerationPrompt: true,
		BOSToken: "<s>", EOSToken: "</s>", Kwargs: map[string]any{"enable_thinking": false},
		Now: "2026-01-02T03:04:05", OmitTools: true,
	})
	require.NoError(t, err)

	opts := render.Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>",
		Kwargs: map[string]any{"enable_thinking": false}, Now: now}
	identical, pyRendered, bothRaise := 0, 0, 0
	for i, py := range results {
		got, gerr := func() (string, error) {
			tm, err := render.Parse(tpls[i].Source)
			if err != nil {
				return "", err
			}
			return tm.Render(decisionMessages, opts)
		}()
		if py.Output == nil {
			switch {
			case gerr != nil:
				bothRaise++
			case knownLenient[py.Name] != "":
				t.Logf("%s: Python raises (%s), Go renders it (known: %s)", py.Name, deref(py.ErrorType), knownLenient[py.Name])
			default:
				t.Errorf("%s: Python raised %s (%s) but Go rendered", py.Name, deref(py.ErrorType), deref(py.Error))
			}
			continue
		}
		pyRendered++
		if gerr != nil {
			t.Errorf("%s: Go failed: %v", py.Name, gerr)
			continue
		}
		if got != *py.Output {
			k := 0
			for k < len(got) && k < len(*py.Output) && got[k] == (*py.Output)[k] {
				k++
			}
			t.Errorf("%s: differs at byte %d: go %q, python %q", py.Name, k,
				got[max(0, k-30):min(len(got), k+30)], (*py.Output)[max(0, k-30):min(len(*py.Output), k+30)])
			continue
		}
		identical++
	}
	t.Logf("%d templates: %d/%d rendered by Python are byte-identical in Go; %d raise in both", len(tpls), identical, pyRendered, bothRaise)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
