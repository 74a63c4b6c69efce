package bench

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/llamaserver"
)

// PathNames are the paths Measure knows, in the order it runs them.
var PathNames = []string{"prepare", "engine", "packed", "sequential", "http", "hardware"}

// Config is what Measure runs: the rows through each of Paths (PathNames) on the model, with
// the Base options (contract, threads, template, devices) the CLI parsed. PrepareWorkers is
// how many rows the prepare path prepares at once (0: runtime.GOMAXPROCS, every core). Runtime is a
// llama-server's URL for the http path (else Server, a llama-server binary, is started on the
// model: "" finds the one make server built, llamaserver.Find); LlamaBench is llama-bench's
// binary for the hardware path ("" finds it beside llama-server); Log gets progress lines.
type Config struct {
	Model   string
	Rows    []contract.Row
	Paths   []string
	Base    gojev.Options
	Threads int
	// PrepareWorkers: see above.
	PrepareWorkers int
	Runtime        string
	APIKey         string
	NProbs         int
	Server         string
	LlamaBench     string
	Log            io.Writer
}

// Measure runs the rows through each path, one after the other, and returns the report with
// its ratios and agreement checks (Report.Compare).
func Measure(ctx context.Context, cfg Config) (*Report, error) {
	var err error
	if cfg.Server == "" && cfg.Runtime == "" && slices.Contains(cfg.Paths, "http") {
		if cfg.Server, err = llamaserver.Find(llamaserver.RepoRoot()); err != nil {
			return nil, err
		}
	}
	if cfg.LlamaBench == "" && slices.Contains(cfg.Paths, "hardware") {
		if cfg.LlamaBench, err = llamaserver.FindBench(llamaserver.RepoRoot()); err != nil {
			return nil, err
		}
	}
	b := cfg.Base // the runtime settings every path shares; each path sets its own decoding
	cfg.Base = gojev.Options{
		Contract: b.Contract,
		Runtime: backend.InProcessOptions{Options: backend.Options{ChatTemplateKwargs: b.Runtime.ChatTemplateKwargs, TemplateTime: b.Runtime.TemplateTime}, NThreads: cfg.Threads, NGPULayers: b.Runtime.NGPULayers, NoGPU: b.Runtime.NoGPU, Plugins: b.Runtime.Plugins, CPUFallback: b.Runtime.CPUFallback, ChatTemplate: b.Runtime.ChatTemplate,
			NCtx: b.Runtime.NCtx, NBatch: b.Runtime.NBatch, NUBatch: b.Runtime.NUBatch, FlashAttn: b.Runtime.FlashAttn, PackSeqs: b.Runtime.PackSeqs, NoSharedPrefix: b.Runtime.NoSharedPrefix, SplitKV: b.Runtime.SplitKV},
	}
	rows, model := cfg.Rows, cfg.Model
	rep := &Report{Rows: len(rows), Threads: cfg.Threads, Model: model, Contract: cfg.Base.Contract.String(), Started: time.Now().UTC()}
	bopts := backend.Options{ChatTemplateKwargs: cfg.Base.Runtime.ChatTemplateKwargs, TemplateTime: cfg.Base.Runtime.TemplateTime}
	run := func(name string, f func() (*Path, error)) error {
		fmt.Fprintf(cfg.Log, "bench: %s, %d rows ...\n", name, len(rows))
		p, err := f()
		if err != nil {
			return fmt.Errorf("bench %s: %w", name, err)
		}
		p.Name = name
		fmt.Fprintf(cfg.Log, "bench: %s: %.3g decisions/s, %.0f prompt tokens/s, p50 %.0f ms\n", name, p.DecisionsPerS, p.PromptTokensPerS, p.P50MS)
		return nil
	}
	base := cfg.Base
	// measure runs the rows through a Decider on rt (nil: in-process with opts), together or
	// one at a time.
	measure := func(name string, rt backend.Backend, o gojev.Options, together bool) (*Path, error) {
		var d *gojev.Decider
		var err error
		if rt == nil {
			d, err = gojev.Open(ctx, model, o)
		} else {
			d, err = gojev.New(ctx, rt, o)
		}
		if err != nil {
			return nil, err
		}
		defer d.Close()
		return Run(ctx, name, d, rows, together)
	}
	if slices.Contains(cfg.Paths, "prepare") {
		if err := run("prepare", func() (*Path, error) {
			d, err := gojev.Open(ctx, model, base)
			if err != nil {
				return nil, err
			}
			defer d.Close()
			workers := cfg.PrepareWorkers
			if workers <= 0 {
				workers = runtime.GOMAXPROCS(0)
			}
			rep.Prepare, err = Prepare(ctx, "prepare", d, rows, workers)
			return rep.Prepare, err
		}); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Paths, "engine") {
		if err := run("engine", func() (p *Path, err error) {
			o := base
			o.Runtime.Decode = backend.DecodeOneSequence
			rep.Engine, err = measure("engine", nil, o, true)
			return rep.Engine, err
		}); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Paths, "packed") {
		if err := run("packed", func() (p *Path, err error) {
			o := base
			o.Runtime.Decode = backend.DecodePacked
			rep.Packed, err = measure("packed", nil, o, true)
			return rep.Packed, err
		}); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Paths, "sequential") {
		if err := run("sequential", func() (p *Path, err error) {
			o := base
			o.Runtime.NoPrefixReuse = true
			rep.Sequential, err = measure("sequential", nil, o, false)
			return rep.Sequential, err
		}); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Paths, "http") {
		if err := run("http", func() (*Path, error) {
			url := cfg.Runtime
			if url == "" {
				srv, err := llamaserver.Start(ctx, llamaserver.Options{Bin: cfg.Server, Model: model, Threads: cfg.Threads})
				if err != nil {
					return nil, err
				}
				defer srv.Close()
				url = srv.URL
			}
			hb := backend.NewHTTP(url, backend.HTTPOptions{Options: bopts, APIKey: cfg.APIKey, NProbs: cfg.NProbs})
			if err := hb.Ready(ctx); err != nil {
				return nil, err
			}
			var err error
			rep.HTTP, err = measure("http", hb, base, false)
			return rep.HTTP, err
		}); err != nil {
			return nil, err
		}
	}
	if slices.Contains(cfg.Paths, "hardware") {
		n := meanPromptTokens(rep)
		if n == 0 {
			n = 256
		}
		fmt.Fprintf(cfg.Log, "bench: hardware: %s -p %d -t %d ...\n", cfg.LlamaBench, n, cfg.Threads)
		if rep.HardwarePromptTokensPerS, err = LlamaBench(ctx, cfg.LlamaBench, model, cfg.Threads, n, cfg.Base.Runtime.FlashAttn); err != nil {
			return nil, err
		}
		rep.HardwarePromptTokens = n
	}
	rep.Compare()
	return rep, nil
}

// meanPromptTokens is the rows' mean prompt length, from whichever path measured it.
func meanPromptTokens(r *Report) int {
	for _, p := range []*Path{r.Sequential, r.HTTP, r.Engine, r.Prepare} {
		if p != nil && p.PromptTokens > 0 {
			prompts := r.Rows
			if r.Contract == contract.BinaryPromptVersion {
				prompts = 0
				for _, s := range p.SHA {
					prompts += len(s)
				}
			}
			return int(p.PromptTokens) / max(1, prompts)
		}
	}
	return 0
}
