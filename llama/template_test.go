package llama_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

const chatml = `{% for m in messages %}<|im_start|>{{ m['role'] }}
{{ m['content'] }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

var msgs = []render.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Hi"}}

func TestRenderMatchesTheGoRendererOnChatML(t *testing.T) {
	tm, err := llama.ParseTemplate(chatml, "<s>", "</s>")
	require.NoError(t, err)
	defer tm.Close()
	opts := render.Options{AddGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": false}}
	got, err := tm.Render(msgs, opts)
	require.NoError(t, err)
	assert.Equal(t, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", got)

	goT, err := render.Parse(chatml)
	require.NoError(t, err)
	want, err := goT.Render(msgs, opts)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	opts.AddGenerationPrompt = false
	got, err = tm.Render(msgs, opts)
	require.NoError(t, err)
	assert.False(t, strings.HasSuffix(got, "assistant\n"), "add_generation_prompt=false: %q", got)
}

func TestKwargsAndTheClockReachTheTemplate(t *testing.T) {
	src := `{{ strftime_now('%Y-%m-%d') }}|{{ enable_thinking }}|{{ flavour }}|{% for m in messages %}{{ m.content }}{% endfor %}`
	tm, err := llama.ParseTemplate(src, "<s>", "</s>")
	require.NoError(t, err)
	defer tm.Close()
	cases := []struct {
		name   string
		kwargs map[string]any
		now    time.Time
		want   string
	}{
		{"pinned date, thinking off", map[string]any{"enable_thinking": false, "flavour": "salt"}, time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC), "2026-01-02|False|salt|"},
		{"another date, thinking on", map[string]any{"enable_thinking": true, "flavour": "<&>"}, time.Date(2025, 12, 31, 12, 0, 0, 0, time.UTC), "2025-12-31|True|<&>|"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tm.Render(msgs, render.Options{Kwargs: tc.kwargs, Now: tc.now})
			require.NoError(t, err)
			assert.Equal(t, tc.want+"Be brief.Hi", got)
		})
	}
}

func TestErrorsAreErrorsNotCrashes(t *testing.T) {
	_, err := llama.ParseTemplate("{% for %}", "<s>", "</s>")
	require.Error(t, err)
	assert.ErrorIs(t, err, render.ErrTemplate, "one sentinel for both renderers")
	assert.ErrorIs(t, err, llama.ErrTemplate)

	// llama.cpp renders a template once at parse time to learn its capabilities, so a template
	// that always raises fails in Parse.
	_, err = llama.ParseTemplate(`{{ raise_exception('no system role') }}`, "<s>", "</s>")
	require.ErrorIs(t, err, render.ErrTemplate)
	assert.Contains(t, err.Error(), "no system role")

	// One that raises on some input fails in Render.
	tm, err := llama.ParseTemplate(`{% for m in messages %}{% if 'boom' in m.content %}{{ raise_exception('boom in content') }}{% endif %}{{ m.content }}{% endfor %}`, "<s>", "</s>")
	require.NoError(t, err)
	_, err = tm.Render([]render.Message{{Role: "user", Content: "boom"}}, render.Options{})
	require.ErrorIs(t, err, render.ErrTemplate)
	assert.Contains(t, err.Error(), "boom in content")

	_, err = tm.Render(msgs, render.Options{Kwargs: map[string]any{"enable_thinking": "yes"}})
	assert.ErrorContains(t, err, "enable_thinking")

	require.NoError(t, tm.Close())
	require.NoError(t, tm.Close(), "Close is idempotent")
	_, err = tm.Render(msgs, render.Options{})
	assert.ErrorIs(t, err, llama.ErrClosed)
	assert.Zero(t, llama.LiveTemplates(), "every template freed")
}
