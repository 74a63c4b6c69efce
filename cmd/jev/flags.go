package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/internal/cache"
	"github.com/gojev/gojev/internal/cli"
)

// modelFlags are the flags every command shares, named after llama.cpp's own CLI.
type modelFlags struct {
	model        string
	nCtx         int
	nBatch       int
	threads      int
	nGPULayers   int
	kwargs       string
	templateFile string
	templateDate string
	noMmap       bool
	verbose      bool
	renderer     string
	runtime      string
	apiKey       string
	nProbs       int
	plugins      string
	cpuFallback  bool
	decode       string
	// the packed decode's settings (registerDecoding)
	nUBatch                            int
	flashAttn, noSharedPrefix, splitKV bool
	packSeqs                           int
	// serving is jev serve's: --api-key then names the keys the server accepts, and --runtime's
	// own key comes from $JEV_RUNTIME_API_KEY.
	serving bool
}

func (f *modelFlags) register(fs *cli.FlagSet) {
	cli.String(fs, &f.model, "m,model", "", "`path` of the GGUF model (default $GOJEV_MODEL, else the model `make model` fetched)")
	cli.Int(fs, &f.threads, "t,threads", runtime.NumCPU(), "n_threads: CPU `threads` for decoding (default: this machine's CPU count, here "+strconv.Itoa(runtime.NumCPU())+")")
	cli.Int(fs, &f.nGPULayers, "ngl,n-gpu-layers", -1, "n_gpu_layers: `layers` to offload to the GPU device a --plugin brings (-1 all, 0 none: the CPU decides)")
	cli.String(fs, &f.kwargs, "chat-template-kwargs", `{"enable_thinking": false}`, "chat_template_kwargs: a JSON `object` of template variables")
	cli.String(fs, &f.templateFile, "chat-template-file", "", "Jinja chat template `file` to use instead of the model's tokenizer.chat_template")
	cli.String(fs, &f.templateDate, "template-date", "", "pin the `date` (YYYY-MM-DD) that templates read (strftime_now, date_string); every result records it as template_date (default: today, UTC)")
	cli.String(fs, &f.renderer, "renderer", "", "chat-template `engine`: go (Go Jinja, as transformers renders; the default in-process), llama (llama.cpp's common/chat, as llama-server renders), server (the runtime's /apply-template; the default and only choice with --runtime)")
	cli.String(fs, &f.runtime, "runtime", "", "decide through a llama-server at this base `URL` (e.g. http://127.0.0.1:8080) instead of in-process: /apply-template, /tokenize, /detokenize, /completion")
	if f.serving {
		cli.String(fs, &f.apiKey, "api-key", "", "bearer `keys` the server accepts, comma-separated (default $GOJEV_API_KEYS); without any it accepts requests to a loopback name only and listens on 127.0.0.1. With --runtime, the llama-server's own key comes from $GOJEV_RUNTIME_API_KEY")
	} else {
		cli.String(fs, &f.apiKey, "api-key", "", "bearer `key` for --runtime (default $GOJEV_RUNTIME_API_KEY)")
	}
	cli.Int(fs, &f.nProbs, "n-probs", 1000, "with --runtime: the first n_probs asked of /completion; raised 8× at a time while an option's token is missing from the top `n`")
	cli.String(fs, &f.plugins, "plugin", "", "ggml backend plugin `files` to load before the model, comma-separated (libggml-vulkan.so, libggml-cuda.so; make plugin GPU=… or gojev-native install --gpu … fetches them); default $GOJEV_PLUGINS (colon-separated); none loads none")
	cli.Bool(fs, &f.cpuFallback, "cpu-fallback", "decide on the CPU when a --plugin fails to load or finds no GPU (default: that is an error)")
	cli.Bool(fs, &f.noMmap, "no-mmap", "read the weights into memory instead of memory-mapping them")
	cli.Bool(fs, &f.verbose, "v,verbose", "log llama.cpp's own messages (model loading, backends) to stderr")
	f.nCtx, f.nBatch = backend.DefaultNCtx, backend.DefaultNBatch
}

// registerDecoding adds the flags that matter only when rows are decoded (jev decide).
func (f *modelFlags) registerDecoding(fs *cli.FlagSet) {
	cli.Int(fs, &f.nCtx, "c,ctx-size", backend.DefaultNCtx, "n_ctx: the longest prompt in `tokens`; longer rows get an error record (llama.cpp rounds small values up to 256 and jev caps it at the model's training context)")
	cli.Int(fs, &f.nBatch, "b,batch-size", backend.DefaultNBatch, "n_batch: most `tokens` per llama_decode call")
	cli.String(fs, &f.decode, "decode", "", "`mode`: one-sequence (one prompt per llama_decode: exact, the CPU default) or packed (up to --pack-seqs prompts per llama_decode sharing their prefix: the default when layers are offloaded to a GPU; not bit-identical to one-sequence: docs/gpu.md); every record says which decided it")
	cli.Int(fs, &f.nUBatch, "ub,ubatch-size", 0, "n_ubatch: most `tokens` the backend computes at once within a llama_decode (default: n_batch)")
	cli.Bool(fs, &f.flashAttn, "fa,flash-attn", "flash attention on (off by default; docs/gpu.md measures it)")
	cli.Int(fs, &f.packSeqs, "pack-seqs", backend.DefaultPackSeqs, "packed decoding: most `prompts` per llama_decode, each its own sequence (n_seq_max = this + 1)")
	cli.Bool(fs, &f.noSharedPrefix, "no-shared-prefix", "packed decoding: decode each prompt whole in its own sequence instead of their common prefix once, copied (llama_memory_seq_cp)")
	cli.Bool(fs, &f.splitKV, "no-kv-unified", "packed decoding: a KV buffer per sequence (kv_unified off; n_ctx × n_seq_max cells in all); implies --no-shared-prefix")
}

// modelPath resolves -m, then $GOJEV_MODEL (the deprecated $JEV_MODEL), then the cached
// default model.
func (f *modelFlags) modelPath() (string, error) {
	if f.model != "" {
		return f.model, nil
	}
	if p := os.Getenv("GOJEV_MODEL"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", cli.Usage(fmt.Errorf("$GOJEV_MODEL=%s: %w", p, err))
		}
		return p, nil
	}
	if p := os.Getenv("JEV_MODEL"); p != "" {
		if _, err := os.Stat(p); err != nil && !strings.ContainsRune(p, os.PathSeparator) && !strings.HasSuffix(p, ".gguf") {
			// jevkit's tools read JEV_MODEL as a model name (jev-1.13.0): not a file of ours.
			slog.Warn(fmt.Sprintf("$JEV_MODEL=%s is a System One client's model name, not a GGUF file: ignored (gojev reads $GOJEV_MODEL)", p))
		} else {
			return envVar("GOJEV_MODEL", "JEV_MODEL"), nil
		}
	}
	p, err := cache.Model(cache.DefaultModelFile)
	if err != nil {
		return "", cli.Usage(errors.New("no model: pass -m MODEL.gguf or set GOJEV_MODEL"))
	}
	if _, err := os.Stat(p); err != nil {
		return "", cli.Usage(fmt.Errorf("no model: pass -m MODEL.gguf, set GOJEV_MODEL, or run `make model` to fetch the default (%s)", p))
	}
	return p, nil
}

// envVar reads gojev's variable name, else its deprecated name old with a warning. The old
// names (JEV_MODEL, JEV_API_KEY, JEV_RUNTIME_API_KEY) are the ones System One clients read
// for their own settings (jevkit's JEV_MODEL is a model name, jev-eval's JEV_API_KEY its key),
// so one shell could not set both; old is ignored, with a warning, when name is set too.
func envVar(name, old string) string {
	v, ov := os.Getenv(name), os.Getenv(old)
	switch {
	case v != "":
		if ov != "" && ov != v {
			slog.Warn(fmt.Sprintf("$%s is ignored: $%s is set (gojev reads GOJEV_ variables; %s is a System One client's)", old, name, old))
		}
		return v
	case ov != "":
		slog.Warn(fmt.Sprintf("$%s is deprecated for gojev: set $%s (the old name is read by System One clients for their own settings)", old, name))
	}
	return ov
}

// pluginList resolves --plugin (comma-separated; "none" for none), then $GOJEV_PLUGINS
// (colon-separated, as PATH is).
func (f *modelFlags) pluginList() []string {
	if f.plugins == "none" {
		return nil
	}
	list := strings.Split(f.plugins, ",")
	if f.plugins == "" {
		list = filepath.SplitList(os.Getenv("GOJEV_PLUGINS"))
	}
	var out []string
	for _, p := range list {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// options turns the flags into gojev.Options: its Runtime (the contract and bias control are
// the caller's).
func (f *modelFlags) options() (gojev.Options, error) {
	opts := gojev.Options{
		Runtime: backend.InProcessOptions{NGPULayers: f.nGPULayers, NoGPU: f.nGPULayers == 0, NCtx: f.nCtx, NBatch: f.nBatch, NThreads: f.threads, NoMmap: f.noMmap, Renderer: f.renderer, Plugins: f.pluginList(), CPUFallback: f.cpuFallback, Decode: f.decode,
			NUBatch: f.nUBatch, FlashAttn: f.flashAttn, PackSeqs: f.packSeqs, NoSharedPrefix: f.noSharedPrefix, SplitKV: f.splitKV},
	}
	// The runtime's own check (backend.InProcessOptions.Check), before any model is loaded.
	if err := (backend.InProcessOptions{NCtx: f.nCtx, NBatch: f.nBatch, NUBatch: f.nUBatch, NThreads: f.threads, Decode: f.decode, PackSeqs: f.packSeqs}).Check(); err != nil {
		return opts, cli.Usage(fmt.Errorf("%w (flags -c/--ctx-size, -b/--batch-size, -ub/--ubatch-size, -t/--threads, --decode, --pack-seqs)", err))
	}
	kwargs, warnings, err := backend.ParseTemplateKwargs([]byte(f.kwargs))
	if err != nil {
		return opts, cli.Usage(fmt.Errorf("--chat-template-kwargs %w", err))
	}
	for _, w := range warnings {
		slog.Warn("--chat-template-kwargs: " + w)
	}
	opts.Runtime.ChatTemplateKwargs = kwargs
	if f.templateFile != "" {
		src, err := os.ReadFile(f.templateFile)
		if err != nil {
			return opts, cli.Usage(fmt.Errorf("--chat-template-file: %w", err))
		}
		opts.Runtime.ChatTemplate = string(src)
	}
	if f.templateDate != "" {
		t, err := time.Parse(time.DateOnly, f.templateDate)
		if err != nil {
			return opts, cli.Usage(fmt.Errorf("--template-date: want YYYY-MM-DD: %w", err))
		}
		opts.Runtime.TemplateTime = t
	}
	return opts, nil
}

// open loads the model in-process (gojev.Open), or wraps the --runtime server (gojev.New over
// backend.NewHTTP), with the contract and bias control in base, and runs the start-up checks.
func (f *modelFlags) open(ctx context.Context, stderr io.Writer, base gojev.Options) (*gojev.Decider, error) {
	logger := newLogger(stderr, f.verbose)
	slog.SetDefault(logger)
	setNativeLogger(logger)
	rt, err := f.options()
	if err != nil {
		return nil, err
	}
	opts := base
	opts.Runtime = rt.Runtime // the flags set the runtime's options, the caller the decision's
	if f.runtime != "" {
		if f.renderer != "" && f.renderer != backend.RendererServer {
			return nil, cli.Usage(fmt.Errorf("--renderer %s: with --runtime the server renders (--renderer server)", f.renderer))
		}
		b := backend.NewHTTP(f.runtime, backend.HTTPOptions{
			Options: backend.Options{ChatTemplateKwargs: opts.Runtime.ChatTemplateKwargs, TemplateTime: opts.Runtime.TemplateTime},
			APIKey:  f.key(), NProbs: f.nProbs,
		})
		if err := b.Ready(ctx); err != nil { // before any work: not reported as a model failing its checks
			return nil, fmt.Errorf("--runtime: %w", err)
		}
		return gojev.New(ctx, b, opts)
	}
	if err := f.checkLocalRenderer(); err != nil {
		return nil, err
	}
	path, err := f.modelPath()
	if err != nil {
		return nil, err
	}
	return gojev.Open(ctx, path, opts)
}

// key resolves --runtime's key: --api-key (not jev serve's, which names the keys it accepts),
// then $GOJEV_RUNTIME_API_KEY (deprecated: $JEV_RUNTIME_API_KEY, and $JEV_API_KEY outside jev
// serve).
func (f *modelFlags) key() string {
	if f.serving {
		return envVar("GOJEV_RUNTIME_API_KEY", "JEV_RUNTIME_API_KEY")
	}
	if f.apiKey != "" {
		return f.apiKey
	}
	if k := envVar("GOJEV_RUNTIME_API_KEY", "JEV_RUNTIME_API_KEY"); k != "" {
		return k
	}
	return envVar("GOJEV_RUNTIME_API_KEY", "JEV_API_KEY")
}

// checkLocalRenderer checks --renderer for an in-process run.
func (f *modelFlags) checkLocalRenderer() error {
	switch f.renderer {
	case "", backend.RendererGo, backend.RendererLlama:
		return nil
	case backend.RendererServer:
		return cli.Usage(errors.New("--renderer server needs --runtime URL"))
	}
	return cli.Usage(fmt.Errorf("--renderer %q: want go, llama or server", f.renderer))
}

// parseContract reads --contract.
func parseContract(name string) (gojev.Contract, error) {
	switch name {
	case "direct":
		return gojev.Direct, nil
	case "binary":
		return gojev.Binary, nil
	case "guarded":
		return gojev.Guarded, nil
	case "spotlight":
		return gojev.Spotlight, nil
	}
	return 0, cli.Usage(fmt.Errorf("--contract %q: want direct, guarded, spotlight or binary", name))
}
