//go:build cgo

package parity

import (
	"context"
	"os"
	"path/filepath"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/pyjinja"
	"github.com/gojev/gojev/llama"
	"github.com/gojev/gojev/render"
)

// RunCorpus renders every *.jinja in dir through the Go engine, llama.cpp's common/chat and,
// when python is not "", Python Jinja2 (python must have jinja2), and counts identical renders.
func RunCorpus(ctx context.Context, dir, python string, msgs []contract.ChatMessage) (*Corpus, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jinja"))
	if err != nil {
		return nil, err
	}
	var tpls []pyjinja.Template
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		tpls = append(tpls, pyjinja.Template{Name: filepath.Base(f), Source: string(b)})
	}
	kwargs := map[string]any{"enable_thinking": false}
	rm := make([]render.Message, len(msgs))
	pm := make([]pyjinja.Message, len(msgs))
	for i, m := range msgs {
		rm[i] = render.Message{Role: m.Role, Content: m.Content}
		pm[i] = pyjinja.Message{Role: m.Role, Content: m.Content}
	}
	c := &Corpus{Templates: len(tpls)}
	var py []pyjinja.Result
	if python != "" {
		py, err = pyjinja.Render(ctx, python, pyjinja.Request{Templates: tpls, Messages: pm, AddGenerationPrompt: true,
			BOSToken: "<s>", EOSToken: "</s>", Kwargs: kwargs, Now: CorpusNow.Format("2006-01-02T15:04:05"), OmitTools: true})
		if err != nil {
			c.PythonError = err.Error()
			py = nil
		}
	}
	opts := render.Options{AddGenerationPrompt: true, BOSToken: "<s>", EOSToken: "</s>", Kwargs: kwargs, Now: CorpusNow}
	for i, tp := range tpls {
		goOut, goErr := func() (string, error) {
			t, err := render.Parse(tp.Source)
			if err != nil {
				return "", err
			}
			return t.Render(rm, opts)
		}()
		llOut, llErr := func() (string, error) {
			t, err := llama.ParseTemplate(tp.Source, "<s>", "</s>")
			if err != nil {
				return "", err
			}
			defer t.Close()
			return t.Render(rm, opts)
		}()
		if goErr == nil && llErr == nil {
			c.BothRender++
			if goOut == llOut {
				c.GoVsLlama++
			} else {
				c.Differences = append(c.Differences, Difference{tp.Name, "go_vs_llama", FirstDifference(goOut, llOut)})
			}
		}
		if py == nil || py[i].Output == nil {
			continue
		}
		c.PythonRendered++
		if goErr == nil && goOut == *py[i].Output {
			c.GoVsPython++
		} else {
			c.Differences = append(c.Differences, Difference{tp.Name, "go_vs_python", describe(goOut, goErr, *py[i].Output)})
		}
		if llErr == nil && llOut == *py[i].Output {
			c.LlamaVsPython++
		} else {
			c.Differences = append(c.Differences, Difference{tp.Name, "llama_vs_python", describe(llOut, llErr, *py[i].Output)})
		}
	}
	return c, nil
}

func describe(out string, err error, want string) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return FirstDifference(out, want)
}
