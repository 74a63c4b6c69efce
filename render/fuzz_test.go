package render_test

import (
	"testing"
	"time"

	"github.com/gojev/gojev/render"
)

// FuzzRender renders fuzzed message contents through a ChatML-style and a Gemma-style
// template, and fuzzed template sources through Parse: errors are fine, panics are not.
func FuzzRender(f *testing.F) {
	chatml, err := render.Parse("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
	if err != nil {
		f.Fatal(err)
	}
	gemma, err := render.Parse("{{ bos_token }}{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content | trim }}<end_of_turn>\n{% endfor %}<start_of_turn>model\n")
	if err != nil {
		f.Fatal(err)
	}
	f.Add("hello", "{{ x }}")
	f.Add("{% raw %}{{{{ }}", "{% for %}")
	f.Add("\x00\xff<|im_end|>", "{{ messages[0].content | tojson }}")
	f.Fuzz(func(t *testing.T, content, source string) {
		msgs := []render.Message{{Role: "system", Content: content}, {Role: "user", Content: content}}
		opts := render.Options{AddGenerationPrompt: true, BOSToken: "<s>", Now: time.Unix(0, 0)}
		for _, tm := range []*render.Template{chatml, gemma} {
			if _, err := tm.Render(msgs, opts); err != nil {
				t.Fatalf("a fixed template must render any content: %v", err)
			}
		}
		if tm, err := render.Parse(source); err == nil {
			_, _ = tm.Render(msgs, opts)
		}
	})
}
