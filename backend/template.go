//go:build cgo

package backend

import (
	"fmt"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

// TemplateOptions choose how a loaded model's prompts are rendered.
type TemplateOptions struct {
	Options
	// Renderer is RendererGo (default) or RendererLlama.
	Renderer string
	// ChatTemplate overrides the model's tokenizer.chat_template (Jinja source).
	ChatTemplate string
}

// Template renders a loaded model's chat template with the chosen renderer, the backend's
// chat_template_kwargs and its fixed clock. The in-process backend and package engine share
// it, so both render byte-identical prompts. Safe for concurrent use.
type Template struct {
	name  string
	goT   *render.Template
	llT   *llama.Template
	ropts render.Options
}

// NewTemplate prepares model's chat template (or opts.ChatTemplate). Errors wrap ErrNoTemplate
// (the model has none and none was given) or render.ErrTemplate (both renderers).
func NewTemplate(model *llama.Model, opts TemplateOptions) (*Template, error) {
	t := &Template{name: opts.Renderer}
	if t.name == "" {
		t.name = RendererGo
	}
	source := opts.ChatTemplate
	if source == "" {
		s, ok, err := model.ChatTemplate("")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("%w: %s has no tokenizer.chat_template; give one (jev: --chat-template-file)", ErrNoTemplate, model.Path())
		}
		source = s
	}
	bos, err := model.Vocab().BOSText()
	if err != nil {
		return nil, err
	}
	eos, err := model.Vocab().EOSText()
	if err != nil {
		return nil, err
	}
	t.ropts = render.Options{AddGenerationPrompt: true, BOSToken: bos, EOSToken: eos, Kwargs: opts.kwargs(), Now: opts.clock()}
	switch t.name {
	case RendererGo:
		t.goT, err = render.Parse(source)
	case RendererLlama:
		t.llT, err = llama.NewTemplate(model, source)
	default:
		err = fmt.Errorf("backend: unknown renderer %q (want %q or %q)", t.name, RendererGo, RendererLlama)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// Name returns RendererGo or RendererLlama.
func (t *Template) Name() string { return t.name }

// Now returns the clock the template reads.
func (t *Template) Now() time.Time { return t.ropts.Now }

// SHA256 returns the SHA-256 of the template source the renderer uses.
func (t *Template) SHA256() string {
	if t.goT != nil {
		return t.goT.SHA256()
	}
	return contract.PromptSHA256(t.llT.Source())
}

// Render renders messages with add_generation_prompt=true. Errors wrap render.ErrTemplate.
func (t *Template) Render(messages []contract.ChatMessage) (string, error) {
	rm := make([]render.Message, len(messages))
	for i, m := range messages {
		rm[i] = render.Message{Role: m.Role, Content: m.Content}
	}
	if t.goT != nil {
		return t.goT.Render(rm, t.ropts)
	}
	return t.llT.Render(rm, t.ropts)
}

// Close frees the llama.cpp template, if any. Idempotent.
func (t *Template) Close() error {
	if t.llT != nil {
		return t.llT.Close()
	}
	return nil
}
