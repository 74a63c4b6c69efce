package render_test

import (
	"fmt"

	"github.com/gojev/gojev/render"
)

func Example() {
	tm, err := render.Parse(`{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}thinking={{ enable_thinking }}`)
	if err != nil {
		panic(err)
	}
	out, err := tm.Render([]render.Message{{Role: "user", Content: "Which queue?"}},
		render.Options{AddGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": false}})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// <|im_start|>user
	// Which queue?<|im_end|>
	// <|im_start|>assistant
	// thinking=False
}
