package render_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/render"
)

func TestPythonSemantics(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	msgs := []render.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}
	tests := []struct {
		name, source string
		opts         render.Options
		want         string
	}{
		{"bool kwarg renders as Python", "{{ enable_thinking }}", render.Options{Kwargs: map[string]any{"enable_thinking": false}}, "False"},
		{"true kwarg", "{{ enable_thinking }}", render.Options{Kwargs: map[string]any{"enable_thinking": true}}, "True"},
		// Known difference: Python prints None as "None"; ardanlabs/jinja v1.8.0 prints "".
		{"None kwarg (known difference)", "{{ x }}", render.Options{Kwargs: map[string]any{"x": nil}}, ""},
		{"None is none", "{{ x is none }}", render.Options{Kwargs: map[string]any{"x": nil}}, "True"},
		{"false is falsy, not the string", "{% if enable_thinking %}think{% else %}no{% endif %}", render.Options{Kwargs: map[string]any{"enable_thinking": false}}, "no"},
		{"json number kwarg", "{{ n + 1 }}", render.Options{Kwargs: map[string]any{"n": json.Number("41")}}, "42"},
		{"one final newline dropped", "x\n", render.Options{}, "x"},
		{"only one", "x\n\n", render.Options{}, "x\n"},
		{"CRLF normalised", "a\r\nb\r\n", render.Options{}, "a\nb"},
		{"trim_blocks", "{% if true %}\nyes\n{% endif %}\n", render.Options{}, "yes\n"},
		{"lstrip_blocks", "  {% if true %}yes{% endif %}", render.Options{}, "yes"},
		{"loop controls", "{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}{{ m.role }}{% endfor %}", render.Options{}, "user"},
		{"break", "{% for m in messages %}{{ m.content }}{% break %}{% endfor %}", render.Options{}, "S"},
		{"message dict order", "{{ messages[0] | tojson }}", render.Options{}, `{"role": "system", "content": "S"}`},
		{"tojson keeps unicode", `{{ "é" | tojson }}`, render.Options{}, `"é"`},
		{"special tokens", "{{ bos_token }}|{{ eos_token }}|{{ pad_token }}", render.Options{BOSToken: "<s>", EOSToken: "</s>", SpecialTokens: map[string]string{"pad_token": "<pad>"}}, "<s>|</s>|<pad>"},
		{"generation prompt", "{% if add_generation_prompt %}<|assistant|>{% endif %}", render.Options{AddGenerationPrompt: true}, "<|assistant|>"},
		{"strftime_now pinned", `{{ strftime_now("%d %b %Y") }}|{{ strftime_now('%B %d, %Y') }}|{{ strftime_now("%Y-%m-%d") }}`, render.Options{Now: now}, "02 Jan 2026|January 02, 2026|2026-01-02"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm, err := render.Parse(tc.source)
			require.NoError(t, err)
			got, err := tm.Render(msgs, tc.opts)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestErrors(t *testing.T) {
	_, err := render.Parse("{% if %}")
	assert.ErrorIs(t, err, render.ErrTemplate)

	tm, err := render.Parse(`{{ raise_exception("System role not supported") }}`)
	require.NoError(t, err)
	_, err = tm.Render(nil, render.Options{})
	assert.ErrorIs(t, err, render.ErrRaised)
	assert.NotErrorIs(t, err, render.ErrTemplate)
	assert.Contains(t, err.Error(), "System role not supported")

	tm, err = render.Parse(`{{ messages | unknown_filter }}`)
	if err == nil {
		_, err = tm.Render(nil, render.Options{})
	}
	assert.ErrorIs(t, err, render.ErrTemplate, "an unknown filter fails")

	// Known difference: Jinja2 raises UndefinedError on an attribute of an undefined value
	// (messages[0] of an empty list); ardanlabs/jinja v1.8.0 renders it empty.
	tm, err = render.Parse(`{{ messages[0].content }}`)
	require.NoError(t, err)
	got, err := tm.Render(nil, render.Options{})
	assert.NoError(t, err)
	assert.Empty(t, got)
}

func TestSourceHash(t *testing.T) {
	a, err := render.Parse("x\r\n")
	require.NoError(t, err)
	b, err := render.Parse("x")
	require.NoError(t, err)
	assert.Equal(t, "x", a.Source())
	assert.Equal(t, a.SHA256(), b.SHA256(), "the hash is of the normalised source")
	assert.Equal(t, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", b.SHA256())
}

func TestStrftime(t *testing.T) {
	tm := time.Date(2026, 3, 7, 15, 4, 5, 123456000, time.UTC)
	assert.Equal(t, "Sat Saturday Mar March 07  7 15 03 066 03 04 PM 05 26 2026 123456 % %Q",
		render.Strftime(tm, "%a %A %b %B %d %e %H %I %j %m %M %p %S %y %Y %f %% %Q"))
}

func TestConcurrentRenders(t *testing.T) {
	tm, err := render.Parse("{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ strftime_now('%Y') }}")
	require.NoError(t, err)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			msg := fmt.Sprint(i)
			got, err := tm.Render([]render.Message{{Role: "user", Content: msg}}, render.Options{Now: time.Date(2000+i, 1, 1, 0, 0, 0, 0, time.UTC)})
			assert.NoError(t, err)
			assert.Equal(t, fmt.Sprintf("<user>%d%d", i, 2000+i), got)
		})
	}
	wg.Wait()
}
