package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ardanlabs/jinja"
)

// ErrTemplate wraps every failure to compile or render a template other than
// raise_exception (Jinja2's TemplateSyntaxError, UndefinedError, TypeError, ...).
var ErrTemplate = errors.New("render: template error")

// ErrRaised wraps the error of a template that called raise_exception(message), the global
// transformers registers to raise jinja2.exceptions.TemplateError(message). The error text
// ends with the message.
var ErrRaised = errors.New("render: the template raised an exception")

// Message is one chat message; the template sees the dict {"role": Role, "content": Content},
// in that key order.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Options are the template variables of one Render besides messages, as transformers'
// apply_chat_template passes them.
type Options struct {
	// AddGenerationPrompt is add_generation_prompt: end the prompt with the assistant turn's
	// opening.
	AddGenerationPrompt bool
	// BOSToken and EOSToken are bos_token and eos_token (the model's special-token texts).
	BOSToken, EOSToken string
	// SpecialTokens adds further special-token variables (unk_token, pad_token, ...).
	SpecialTokens map[string]string
	// Kwargs are chat_template_kwargs, passed as top-level template variables, keeping their
	// JSON types: nil (None), bool (False/True), string, float64, int, int64, json.Number,
	// []any, map[string]any. {"enable_thinking": false} makes {{ enable_thinking }} render
	// False, as in Python; the string "false" would be truthy.
	Kwargs map[string]any
	// Now is the instant strftime_now formats (in its own location); the zero value means
	// time.Now() at each Render. Pin it to make prompts that read the date reproducible.
	Now time.Time
}

// Template is a compiled chat template. It is immutable and safe for concurrent Render calls
// (the engine compiles once and gives every render an isolated scope).
type Template struct {
	source string
	sha    string
	t      *jinja.Template
}

// Parse compiles a chat template (a GGUF tokenizer.chat_template or a --chat-template-file).
// The source is normalised as Jinja2 loads a template: "\r\n" and "\r" become "\n", and one
// final newline is dropped (keep_trailing_newline=False). trim_blocks and lstrip_blocks apply,
// as transformers configures them. Errors wrap ErrTemplate.
func Parse(source string) (*Template, error) {
	src := strings.ReplaceAll(source, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	sum := sha256.Sum256([]byte(src))
	return &Template{source: src, sha: hex.EncodeToString(sum[:]), t: t}, nil
}

// Source returns the normalised template source.
func (t *Template) Source() string { return t.source }

// SHA256 returns the lowercase hex SHA-256 of the normalised source.
func (t *Template) SHA256() string { return t.sha }

// raised carries raise_exception's message through the engine.
type raised struct{ msg string }

func (r *raised) Error() string { return r.msg }

// Render renders messages with opts, as transformers' render_jinja_template does:
// template.render(messages=…, add_generation_prompt=…, bos_token=…, eos_token=…,
// **special_tokens, **chat_template_kwargs), with raise_exception and strftime_now as
// globals. tools and documents are left undefined (no tools are offered). Errors wrap
// ErrRaised (raise_exception) or ErrTemplate.
func (t *Template) Render(messages []Message, opts Options) (string, error) {
	data := make(map[string]jinja.Value, 8+len(opts.Kwargs)+len(opts.SpecialTokens))
	for k, v := range opts.Kwargs {
		data[k] = toValue(v)
	}
	for k, v := range opts.SpecialTokens {
		data[k] = jinja.NewString(v)
	}
	list := make([]jinja.Value, len(messages))
	for i, m := range messages {
		d := jinja.NewDict()
		d.AsDict().Set("role", jinja.NewString(m.Role))
		d.AsDict().Set("content", jinja.NewString(m.Content))
		list[i] = d
	}
	data["messages"] = jinja.NewList(list)
	data["add_generation_prompt"] = jinja.NewBool(opts.AddGenerationPrompt)
	data["bos_token"] = jinja.NewString(opts.BOSToken)
	data["eos_token"] = jinja.NewString(opts.EOSToken)
	now := opts.Now
	if now.IsZero() {
		now = time.Now()
	}
	data["strftime_now"] = jinja.NewCallable("strftime_now", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		if len(args) != 1 || !args[0].IsString() {
			return jinja.Undefined(), errors.New("strftime_now() takes one format string")
		}
		return jinja.NewString(Strftime(now, args[0].AsString())), nil
	})
	var raisedMsg *raised
	data["raise_exception"] = jinja.NewCallable("raise_exception", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		msg := ""
		if len(args) > 0 && args[0].IsString() {
			msg = args[0].AsString()
		} else if len(args) > 0 {
			msg = args[0].String()
		}
		raisedMsg = &raised{msg}
		return jinja.Undefined(), raisedMsg
	})
	out, err := t.t.RenderValues(data)
	switch {
	case raisedMsg != nil:
		return "", fmt.Errorf("%w: %s", ErrRaised, raisedMsg.msg)
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrTemplate, err)
	}
	return out, nil
}

// toValue converts a chat_template_kwargs value to the engine's value, keeping its type.
func toValue(v any) jinja.Value {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return jinja.NewInt(i)
		}
		f, _ := x.Float64()
		return jinja.NewFloat(f)
	case []any:
		items := make([]jinja.Value, len(x))
		for i, e := range x {
			items[i] = toValue(e)
		}
		return jinja.NewList(items)
	case map[string]any:
		d := jinja.NewDict()
		for k, e := range x {
			d.AsDict().Set(k, toValue(e))
		}
		return d
	}
	return jinja.FromGoValue(v)
}
