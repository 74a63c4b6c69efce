//go:build cgo

package parity

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/llamaserver"
	"github.com/gojev/gojev/llama"
)

// Config is what Run compares: the rows on the model in-process (with Options' template,
// kwargs, clock and devices) against a llama-server: Runtime's URL, or Server (a llama-server
// binary; "" finds the one make server built, llamaserver.Find) started on the model; and,
// unless Corpus is "none", the chat-template corpus in the folder Corpus ("" is the pinned
// llama.cpp's models/templates) (with Python if it has jinja2). Log gets progress and notes.
type Config struct {
	Model   string
	Rows    []contract.Row
	Options gojev.Options
	Threads int
	Runtime string
	APIKey  string
	NProbs  int
	Server  string
	Corpus  string
	Python  string
	Log     io.Writer
}

// Run makes the parity table (Rows, RunCorpus).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Runtime == "" && cfg.Server == "" {
		var err error
		if cfg.Server, err = llamaserver.Find(llamaserver.RepoRoot()); err != nil {
			return nil, err
		}
	}
	if cfg.Corpus == "" {
		cfg.Corpus = filepath.Join(llamaserver.RepoRoot(), "third_party", "llama.cpp", "models", "templates")
	}
	o := cfg.Options
	bopts := backend.Options{ChatTemplateKwargs: o.Runtime.ChatTemplateKwargs, TemplateTime: o.Runtime.TemplateTime}
	ip, err := backend.OpenInProcess(cfg.Model, backend.InProcessOptions{Options: bopts,
		ChatTemplate: o.Runtime.ChatTemplate, NGPULayers: o.Runtime.NGPULayers, NoGPU: o.Runtime.NoGPU, NThreads: o.Runtime.NThreads, NoMmap: o.Runtime.NoMmap,
		Plugins: o.Runtime.Plugins, CPUFallback: o.Runtime.CPUFallback})
	if err != nil {
		return nil, err
	}
	defer ip.Close()
	llm, err := llama.NewTemplate(ip.Model(), o.Runtime.ChatTemplate)
	if err != nil {
		return nil, err
	}
	defer llm.Close()
	url := cfg.Runtime
	if url == "" {
		fmt.Fprintf(cfg.Log, "starting %s on 127.0.0.1 ...\n", cfg.Server)
		srv, err := llamaserver.Start(ctx, llamaserver.Options{Bin: cfg.Server, Model: cfg.Model, Threads: cfg.Threads, Passive: true})
		if err != nil {
			return nil, err
		}
		defer srv.Close()
		url = srv.URL
	}
	hb := backend.NewHTTP(url, backend.HTTPOptions{APIKey: cfg.APIKey, NProbs: cfg.NProbs, Options: bopts})
	if err := hb.Ready(ctx); err != nil {
		return nil, err
	}
	rep, err := Rows(ctx, ip, llm, hb, cfg.Rows, o.Runtime.ChatTemplateKwargs)
	if err != nil {
		return nil, err
	}
	if cfg.Corpus == "none" {
		return rep, nil
	}
	python := cfg.Python
	if python != "" {
		if err := exec.Command(python, "-c", "import jinja2").Run(); err != nil {
			fmt.Fprintf(cfg.Log, "note: %s has no jinja2 (pip install jinja2): the corpus check skips Python\n", python)
			python = ""
		}
	}
	sample := contract.SampleRow()
	msgs, err := contract.DirectMessages(sample.State, sample.Question, sample.Options)
	if err != nil {
		return nil, err
	}
	if rep.Corpus, err = RunCorpus(ctx, cfg.Corpus, python, msgs); err != nil {
		return nil, err
	}
	return rep, nil
}
