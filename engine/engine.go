package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/decide"
	"github.com/gojev/gojev/llama"
)

// Errors of the engine, testable with errors.Is. Row errors also wrap the contract's errors
// (contract.ErrBoundary, contract.ErrNoOptions, ...) and decide's (decide.ErrPromptTooLong,
// decide.ErrSpecialText); decode failures wrap llama's (llama.ErrNoKVSlot, llama.ErrDecode);
// a cancelled request wraps its context's error (context.Canceled, context.DeadlineExceeded);
// a request on a closed Engine wraps llama.ErrClosed.
var (
	// ErrOptions: an Options field is out of range.
	ErrOptions = errors.New("engine: invalid options")
)

// Engine decides rows with one loaded model under one contract, batching the prompts of
// concurrent requests into shared decodes. It is safe for concurrent use; Close it when done.
type Engine struct {
	opts      Options
	model     *llama.Model
	lctx      *llama.Context
	batch     *llama.Batch
	tmpl      *backend.Template
	vocab     backend.VocabTokenizer
	tok       contract.Tokenizer
	slots     contract.Slots       // Direct
	bslots    contract.BinarySlots // Binary
	nCtxTrain int

	submit     chan *job
	quit       chan struct{}
	base       context.Context // cancelled by Close: aborts the decode in flight
	cancelBase context.CancelFunc
	stopped    chan struct{}
	closeMu    sync.Mutex
	closed     bool
	// cpu serialises preparing prompts (rendering, the 17 tokenizations of the boundary
	// check) with llama_decode: a decode already uses every core it is given (n_threads), and a
	// goroutine tokenizing beside it preempts one of its OpenMP threads, which then stalls the
	// others at every barrier (measured: the engine slower than one-at-a-time on 2 cores).
	cpu sync.Mutex

	stats struct {
		rows, prompts, promptTokens, decodedTokens, decodes, rounds atomic.Int64
		decodeNS, prepareNS                                         atomic.Int64
	}

	// prior is PriDe's letter prior (Options.Prior, SetPrior); contentFree caches contextual
	// calibration's content-free p_yes per question and candidate ([]float64, one per
	// debias.ContentFreeEvidence).
	prior       atomic.Pointer[debias.Prior]
	contentFree sync.Map

	// Owned by the scheduler goroutine.
	sched scheduler
}

// Open loads the model at path (llama_model_load_from_file), prepares its chat template, runs
// the start-up checks of Options.Contract and creates the llama context
// (llama_init_from_model, one sequence, flash attention off) and
// the scheduler goroutine. Direct: the sixteen answer slots resolve (contract.ResolveSlots)
// and the boundary holds on decide.SampleRow's prompt (contract.VerifyBoundary). Binary: the
// yes/no slots resolve (contract.ResolveBinarySlots) and appending each single-token yes/no
// spelling to the sample row's first candidate prompt appends exactly that token
// (contract.VerifyBinaryBoundary). A model that fails is refused with an error wrapping the
// contract error; other errors wrap ErrOptions, llama.ErrLoad, llama.ErrContext,
// decide.ErrNoTemplate or render.ErrTemplate.
func Open(path string, opts Options) (*Engine, error) {
	return llama.OpenWith(path, opts.NGPULayers, opts.NoMmap, func(m *llama.Model) (*Engine, error) {
		return newEngine(m, opts)
	})
}

func newEngine(model *llama.Model, opts Options) (*Engine, error) {
	train, err := model.NCtxTrain()
	if err != nil {
		return nil, err
	}
	if opts, err = opts.resolve(train); err != nil {
		return nil, err
	}
	e := &Engine{opts: opts, model: model, vocab: backend.VocabTokenizer{V: model.Vocab()}, nCtxTrain: train}
	e.tok = backend.Tokenizer(context.Background(), e.vocab)
	e.tmpl, err = backend.NewTemplate(model, backend.TemplateOptions{Renderer: opts.Renderer, ChatTemplate: opts.ChatTemplate,
		Options: backend.Options{ChatTemplateKwargs: opts.ChatTemplateKwargs, TemplateTime: opts.TemplateTime}})
	if err != nil {
		return nil, err
	}
	if err := e.startupChecks(); err != nil {
		_ = e.tmpl.Close()
		return nil, err
	}
	lctx, err := llama.NewContext(model, llama.ContextParams{
		NCtx: opts.NCtx, NBatch: opts.NBatch, NUBatch: opts.NBatch, NSeqMax: 1,
		NThreads: opts.NThreads, NThreadsBatch: opts.NThreads,
	})
	if err != nil {
		_ = e.tmpl.Close()
		return nil, err
	}
	batch, err := llama.NewBatch(opts.NBatch, 1)
	if err != nil {
		_ = lctx.Close()
		_ = e.tmpl.Close()
		return nil, err
	}
	e.lctx, e.batch = lctx, batch
	e.opts.NCtx = lctx.NCtx()
	e.submit = make(chan *job, 64)
	e.quit = make(chan struct{})
	e.base, e.cancelBase = context.WithCancel(context.Background())
	e.stopped = make(chan struct{})
	e.sched.init(e)
	e.prior.Store(opts.Prior)
	go e.loop()
	return e, nil
}

// Close stops the scheduler (a decode in flight is aborted; requests not finished return
// errors wrapping llama.ErrClosed), then frees the batch (llama_batch_free), the context
// (llama_free) and the model (llama_model_free). It is idempotent and safe to call
// concurrently with Decide.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	defer e.closeMu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	close(e.quit)
	e.cancelBase()
	<-e.stopped
	_ = e.batch.Close()
	_ = e.lctx.Close()
	_ = e.tmpl.Close()
	return e.model.Close()
}

// Options returns the options in force, defaults filled in (NCtx is the actual n_ctx).
func (e *Engine) Options() Options { return e.opts }

// Model returns the loaded model.
func (e *Engine) Model() *llama.Model { return e.model }

// Slots returns the direct contract's answer slots (zero under Binary).
func (e *Engine) Slots() contract.Slots { return e.slots }

// BinarySlots returns the binary contract's yes/no slots (zero under Direct).
func (e *Engine) BinarySlots() contract.BinarySlots { return e.bslots }

// Stats are a row's token and time accounting.
type Stats struct {
	// PromptTokens is what deciding the row alone with no reuse decodes: the sum of its
	// prompts' lengths (one prompt under Direct, one per option under Binary).
	PromptTokens int `json:"prompt_tokens"`
	// DecodedTokens is what this engine decoded for the row: every token decoded is shared
	// equally among the prompts it served, so the sum over rows is the engine's total.
	DecodedTokens float64 `json:"decoded_tokens"`
	// QueueMS is the time from the request to the first decode of one of its prompts, in ms.
	QueueMS float64 `json:"queue_ms"`
}

// Result is one row's decision. Under Direct the fields are decide.Decision's (PromptSHA256,
// ChosenLetter, Options); under Binary, Candidates holds one entry per option in row order,
// each with its own prompt_sha256, p_yes, yes/no logits and log-probabilities and rank, and
// Chosen is the option with the highest p_yes.
type Result struct {
	ID            json.RawMessage `json:"id"`
	PromptVersion string          `json:"prompt_version"`
	PromptSHA256  string          `json:"prompt_sha256,omitempty"`
	NPromptTokens int             `json:"n_prompt_tokens"`
	Chosen        string          `json:"chosen"`
	ChosenLetter  string          `json:"chosen_letter,omitempty"`
	// Probability is the chosen option's: its probability among the listed options (direct),
	// or its p_yes (binary); the debiased or calibrated one under a bias-control method.
	Probability float64                   `json:"probability"`
	Options     []contract.OptionScore    `json:"options,omitempty"`
	Candidates  []contract.CandidateScore `json:"candidates,omitempty"`
	Label       string                    `json:"label,omitempty"`
	Correct     *bool                     `json:"correct,omitempty"`
	// Debias is what bias control added (nil without Options.Debias).
	Debias *Debiased `json:"debias,omitempty"`
	// Backend is "in-process"; Renderer "go" or "llama"; TemplateDate the clock the template
	// read (as decide.Decision records them).
	Backend      string `json:"backend"`
	Renderer     string `json:"renderer"`
	TemplateDate string `json:"template_date"`
	// MS is the decision's latency in milliseconds: from the call to the result, queueing,
	// rendering and the shared decodes included.
	MS    float64 `json:"ms"`
	Stats Stats   `json:"stats"`
}

// EngineStats are totals since Open.
type EngineStats struct {
	Rows          int64 // rows decided (results returned)
	Prompts       int64 // prompts scored
	PromptTokens  int64 // tokens a no-reuse run would decode for those prompts
	DecodedTokens int64 // prompt tokens actually decoded (llama_decode batch rows, pads excluded)
	Decodes       int64 // llama_decode calls
	Rounds        int64 // scheduling rounds
	// DecodeNS is the time spent in llama_decode; PrepareNS in rendering, the special-text
	// and boundary checks and tokenizing (nanoseconds).
	DecodeNS, PrepareNS int64
}

// Stats returns the engine's totals.
func (e *Engine) Stats() EngineStats {
	return EngineStats{
		Rows: e.stats.rows.Load(), Prompts: e.stats.prompts.Load(), PromptTokens: e.stats.promptTokens.Load(),
		DecodedTokens: e.stats.decodedTokens.Load(), Decodes: e.stats.decodes.Load(), Rounds: e.stats.rounds.Load(),
		DecodeNS: e.stats.decodeNS.Load(), PrepareNS: e.stats.prepareNS.Load(),
	}
}

// Decide decides one row. It renders and checks the row's prompt(s) in the calling goroutine,
// hands them to the scheduler, which decodes them together with other requests' prompts, and
// waits. Errors are per row and never affect other requests: option-count errors, contract.
// ErrBoundary, decide.ErrPromptTooLong, decide.ErrSpecialText, llama decode errors; a
// cancelled ctx returns at once with an error wrapping ctx.Err() (the shared decode is
// aborted when every request in it is cancelled); a closed Engine gives llama.ErrClosed.
func (e *Engine) Decide(ctx context.Context, row contract.Row) (*Result, error) {
	r, err := e.begin(ctx, row, e.opts.Debias)
	if err != nil {
		return nil, err
	}
	return e.end(ctx, r)
}

// Outcome is one row's Result or error, as DecideAll returns them.
type Outcome struct {
	Result *Result
	Err    error
}

// DecideAll decides rows together and returns one Outcome per row, in input order. Rows are
// prepared in order and handed to the scheduler as they are ready, so rows next to each other
// share decodes. A bad row is that row's Outcome.Err. The error is non-nil only when ctx was
// cancelled (it wraps ctx.Err(); rows not finished then carry the same error) or the Engine
// was closed.
func (e *Engine) DecideAll(ctx context.Context, rows []contract.Row) ([]Outcome, error) {
	out := make([]Outcome, len(rows))
	reqs := make([]*request, len(rows))
	for i, row := range rows {
		if err := ctx.Err(); err != nil {
			for k := i; k < len(rows); k++ {
				out[k].Err = fmt.Errorf("engine: %w", err)
			}
			break
		}
		reqs[i], out[i].Err = e.begin(ctx, row, e.opts.Debias)
	}
	for i, r := range reqs {
		if r != nil {
			out[i].Result, out[i].Err = e.end(ctx, r)
		}
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("engine: %w", err)
	}
	e.closeMu.Lock()
	closed := e.closed
	e.closeMu.Unlock()
	if closed {
		return out, fmt.Errorf("engine: %w", llama.ErrClosed)
	}
	return out, nil
}

// job is one row in flight. The scheduler writes its results; the requester reads them after
// done is closed.
type job struct {
	ctx      context.Context
	row      contract.Row
	prompts  []*prompt
	start    time.Time
	left     int       // prompts without logits yet (scheduler)
	queued   time.Time // first decode (scheduler)
	decoded  float64   // scheduler
	finished bool      // scheduler
	done     chan struct{}
	res      *Result
	err      error
}

// prompt is one rendered prompt of a job.
type prompt struct {
	job    *job
	Prompt           // text, hash, tokens
	logits []float32 // next-token logits after the last token, set by the scheduler
}

func (e *Engine) enqueue(ctx context.Context, j *job) error {
	select {
	case e.submit <- j:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("engine: %w", ctx.Err())
	case <-e.quit:
		return fmt.Errorf("engine: %w", llama.ErrClosed)
	}
}

func (e *Engine) wait(ctx context.Context, j *job) (*Result, error) {
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return nil, fmt.Errorf("engine: row %s: %w", j.row.IDJSON(), ctx.Err())
	case <-e.stopped:
		select {
		case <-j.done:
			return j.res, j.err
		default:
			return nil, fmt.Errorf("engine: %w", llama.ErrClosed)
		}
	}
}

// score turns a job whose prompts all have logits into its Result (scheduler goroutine).
func (e *Engine) score(j *job) (*Result, error) {
	res := &Result{ID: j.row.IDJSON(), Label: j.row.Label, Backend: "in-process", Renderer: e.tmpl.Name(),
		TemplateDate: decide.TemplateDate(e.tmpl.Now())}
	for _, p := range j.prompts {
		res.Stats.PromptTokens += p.NTokens
	}
	res.NPromptTokens = res.Stats.PromptTokens
	switch e.opts.Contract {
	case Direct:
		p := j.prompts[0]
		scores, chosen := contract.ScoreDirect(p.logits, e.slots, j.row.Options)
		res.PromptVersion, res.PromptSHA256 = contract.PromptVersion, p.SHA256
		res.Chosen, res.ChosenLetter, res.Options = scores[chosen].ID, scores[chosen].Letter, scores
		res.Probability = scores[chosen].Probability
	case Binary:
		res.PromptVersion = contract.BinaryPromptVersion
		res.Candidates = make([]contract.CandidateScore, len(j.prompts))
		for i, p := range j.prompts {
			res.Candidates[i] = contract.CandidateScore{
				ID: j.row.Options[i].ID, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
				BinaryScore: contract.ScoreBinary(p.logits, e.bslots),
			}
		}
		chosen := contract.RankCandidates(res.Candidates)
		res.Chosen, res.Probability = res.Candidates[chosen].ID, res.Candidates[chosen].PYes
	}
	if j.row.Label != "" {
		ok := res.Chosen == j.row.Label
		res.Correct = &ok
	}
	res.Stats.DecodedTokens = j.decoded
	if !j.queued.IsZero() {
		res.Stats.QueueMS = float64(j.queued.Sub(j.start).Microseconds()) / 1000
	}
	res.MS = float64(time.Since(j.start).Microseconds()) / 1000
	e.stats.rows.Add(1)
	e.stats.prompts.Add(int64(len(j.prompts)))
	e.stats.promptTokens.Add(int64(res.Stats.PromptTokens))
	return res, nil
}
