package gojev

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// Decider decides rows under one contract on one runtime. It is safe for concurrent use (see
// the package documentation); Close it when done.
type Decider struct {
	opts   Options
	rt     backend.Backend
	owns   bool // Close closes rt (Open)
	slots  contract.Slots
	bslots contract.BinarySlots
	check  Check

	submit     chan *job
	quit       chan struct{}
	base       context.Context // cancelled by Close: aborts the decode in flight
	cancelBase context.CancelFunc
	stopped    chan struct{}
	closeMu    sync.Mutex
	closed     bool
	// cpu serialises preparing prompts (rendering, the 17 tokenizations of the boundary
	// check) with decoding when the CPU decodes (serial): in-process, a decode already uses
	// every core it is given (n_threads), and a goroutine tokenizing beside it preempts one of
	// its OpenMP threads, which then stalls the others at every barrier (measured: slower than
	// one at a time on 2 cores). When every layer is on a GPU (backend.InProcess.Devices lists
	// no CPU), preparing overlaps decoding instead: on an H200 preparing was half the wall time
	// while serialised (measurements/gpu/).
	cpu    sync.Mutex
	serial bool
	// preparing counts rows being prepared (begin) or announced by DecideAll and not yet
	// handed to the scheduler; prepared is signalled when it drops to zero. A packed
	// runtime's scheduler waits for them instead of decoding a thin pack.
	preparing atomic.Int64
	prepared  chan struct{}
	packSeqs  int // the runtime's Packer.PackSeqs under DecodePacked, else 1
	// next numbers requests in the order they are begun (request.seq, job.seq).
	next atomic.Uint64

	stats struct {
		rows, prompts, promptTokens, decodedTokens, decodes, rounds atomic.Int64
		decodeNS, prepareNS                                         atomic.Int64
	}

	// prior is PriDe's letter prior (Options.Prior, SetPrior); contentFree caches contextual
	// calibration's content-free p_yes per question and candidate ([]float64, one per
	// debias.ContentFreeEvidence).
	prior       atomic.Pointer[debias.Prior]
	contentFree sync.Map

	sched scheduler // owned by the scheduler goroutine
}

// New returns a Decider on a runtime (backend.NewHTTP, or an in-process backend) after the
// contract's start-up checks: Direct, the sixteen answer slots resolve (single, unique,
// round-tripping tokens: contract.ResolveSlots); Binary, the yes/no slots resolve
// (contract.ResolveBinarySlots); and the answer boundary holds on contract.SampleRow's prompt.
// A model that fails is refused with an error wrapping the contract error
// (contract.ErrSlotNotSingleToken, ErrSlotCollision, ErrSlotRoundTrip, ErrBoundary), or the
// runtime's (render.ErrTemplate, backend.ErrHTTP, ...). The caller keeps rt and closes it after
// the Decider; Open's Decider owns its runtime.
func New(ctx context.Context, rt backend.Backend, opts Options) (*Decider, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	return newDecider(ctx, rt, opts)
}

// newDecider is New for options already checked.
func newDecider(ctx context.Context, rt backend.Backend, opts Options) (*Decider, error) {
	d := &Decider{opts: opts, rt: rt}
	if err := d.startupChecks(ctx); err != nil {
		return nil, err
	}
	d.submit = make(chan *job, 64)
	d.prepared = make(chan struct{}, 1)
	d.serial = decodesOnCPU(rt)
	d.packSeqs = 1
	if pk, ok := rt.(backend.Packer); ok && pk.DecodeMode() == backend.DecodePacked {
		d.packSeqs = pk.PackSeqs()
	}
	d.quit = make(chan struct{})
	d.base, d.cancelBase = context.WithCancel(context.Background())
	d.stopped = make(chan struct{})
	d.sched.d = d
	if opts.Prior == nil && opts.Calibration != nil {
		opts.Prior = opts.Calibration.Prior
	}
	d.prior.Store(opts.Prior)
	go d.loop()
	return d, nil
}

// decodesOnCPU reports whether rt's decodes run on this machine's CPU: an in-process runtime
// whose devices (backend.InProcess.Devices) include the CPU, or any runtime that does not say
// (an HTTP server, often on the same machine).
func decodesOnCPU(rt backend.Backend) bool {
	if r, ok := rt.(backend.DeviceLister); ok {
		devices, _ := r.Devices()
		return slices.Contains(devices, "CPU")
	}
	return true
}

// lockCPU and unlockCPU hold d.cpu around preparing or decoding when the CPU decodes.
func (d *Decider) lockCPU() {
	if d.serial {
		d.cpu.Lock()
	}
}

func (d *Decider) unlockCPU() {
	if d.serial {
		d.cpu.Unlock()
	}
}

// Close stops the scheduler (a decode in flight is aborted; requests not finished return
// errors wrapping ErrClosed) and, for a Decider from Open, closes its runtime (the
// batch, context and model, llama_free and llama_model_free). It is idempotent and safe to
// call concurrently with Decide.
func (d *Decider) Close() error {
	d.closeMu.Lock()
	defer d.closeMu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	close(d.quit)
	d.cancelBase()
	<-d.stopped
	if d.owns {
		return d.rt.Close()
	}
	return nil
}

// Options returns the options the Decider was made with.
func (d *Decider) Options() Options { return d.opts }

// Runtime returns the runtime the Decider decides on (a *backend.InProcess after Open).
func (d *Decider) Runtime() backend.Backend { return d.rt }

// Check returns what the start-up checks found; a Decider exists only if they passed.
func (d *Decider) Check() Check { return d.check }

// SlotInfo describes one answer token: its text (a letter, or a yes/no spelling), token id and
// the token's text as the runtime detokenizes it.
type SlotInfo struct {
	Letter string `json:"letter,omitempty"`
	Token  int32  `json:"token"`
	Piece  string `json:"piece"`
}

// Check is what the start-up checks found (jev check).
type Check struct {
	PromptVersion string `json:"prompt_version"`
	Backend       string `json:"backend"`
	Renderer      string `json:"renderer"`
	// Decode is the in-process runtime's decode mode (Result.Decode); empty over HTTP.
	Decode string `json:"decode,omitempty"`
	// Slots are the direct contract's sixteen answer letters; Yes and No the binary
	// contract's single-token spellings.
	Slots          []SlotInfo `json:"slots,omitempty"`
	Yes            []SlotInfo `json:"yes,omitempty"`
	No             []SlotInfo `json:"no,omitempty"`
	TemplateSHA256 string     `json:"template_sha256,omitempty"`
	TemplateDate   string     `json:"template_date"`
	// Model describes the model file an in-process runtime loaded (nil over HTTP: the weights
	// are the server's).
	Model              *backend.ModelInfo `json:"model,omitempty"`
	SamplePromptSHA256 string             `json:"sample_prompt_sha256"`
	SampleTokens       int                `json:"sample_prompt_tokens"`
	BoundaryHolds      bool               `json:"boundary_holds"`
}

// Stats are a row's token and time accounting.
type Stats struct {
	// PromptTokens is what deciding the row alone with no reuse decodes: the sum of its
	// prompts' lengths (one prompt under Direct, one per option under Binary, times the
	// permutations under Cyclic).
	PromptTokens int `json:"prompt_tokens"`
	// DecodedTokens is what the runtime decoded for the row: every token decoded is shared
	// equally among the prompts it served, so the sum over rows is the Decider's total.
	DecodedTokens float64 `json:"decoded_tokens"`
	// QueueMS is the time from the request to the first decode of one of its prompts, in ms.
	QueueMS float64 `json:"queue_ms"`
}

// Result is one row's decision, under either contract. Direct: PromptSHA256, ChosenLetter
// and Options (each option's logit, logprob and probability; Logit nil over HTTP). Binary:
// Candidates, one per option in row order, each with its own prompt_sha256, p_yes, yes/no
// readouts and rank. Chosen is the chosen option's id and Probability its probability: among
// the listed options (direct) or its p_yes (binary), the debiased or calibrated one under bias
// control, whose Debias keeps the raw choice.
type Result struct {
	ID            json.RawMessage           `json:"id"`
	PromptVersion string                    `json:"prompt_version"`
	PromptSHA256  string                    `json:"prompt_sha256,omitempty"`
	NPromptTokens int                       `json:"n_prompt_tokens"`
	Chosen        string                    `json:"chosen"`
	ChosenLetter  string                    `json:"chosen_letter,omitempty"`
	Probability   float64                   `json:"probability"`
	Options       []contract.OptionScore    `json:"options,omitempty"`
	Candidates    []contract.CandidateScore `json:"candidates,omitempty"`
	Label         string                    `json:"label,omitempty"`
	Correct       *bool                     `json:"correct,omitempty"`
	// Debias is what bias control added (nil without Options.Debias).
	Debias *Debiased `json:"debias,omitempty"`
	// Calibration is what a calibration profile added (nil without Options.Calibration);
	// Probability is then calibrated.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Knockout is how a row of more than 16 options was decided (its passes, and the
	// distribution over all its options); the seed fields above are its final pass's, and
	// Probability the chosen option's share of the distribution.
	Knockout *Knockout `json:"knockout,omitempty"`
	// Suspect is the injection detector's readout of the row's evidence (Options.Detect).
	Suspect *Suspicion `json:"suspect,omitempty"`
	// Abstained: Probability is below Options.AbstainBelow, or the detector flagged the row
	// under Options.AbstainOnSuspect. The choice is kept; a caller hands the row to a person
	// instead of acting on it.
	Abstained bool `json:"abstained,omitempty"`
	// Backend is "in-process" or the server's URL; Renderer "go", "llama" or "server";
	// TemplateDate the clock the template read ("2006-01-02" at midnight, else RFC 3339):
	// rerun with it pinned (Options.TemplateTime, jev --template-date) to reproduce
	// prompt_sha256.
	Backend  string `json:"backend"`
	Renderer string `json:"renderer"`
	// Decode is how the in-process runtime decoded the prompts: "one-sequence" (exact: the
	// logits of each prompt decoded alone) or "packed" (several prompts per llama_decode;
	// backend.InProcessOptions.Decode). Empty over HTTP.
	Decode       string `json:"decode,omitempty"`
	TemplateDate string `json:"template_date"`
	// MS is the decision's latency in milliseconds: from the call to the result, queueing,
	// rendering and the shared decodes included.
	MS    float64 `json:"ms"`
	Stats Stats   `json:"stats"`
}

// DeciderStats are totals since New.
type DeciderStats struct {
	Rows          int64 // rows decided (results returned)
	Prompts       int64 // prompts scored
	PromptTokens  int64 // tokens a no-reuse run would decode for those prompts
	DecodedTokens int64 // prompt tokens the runtime decoded (backend.Readout.Decoded)
	Decodes       int64 // next-token read-outs (backend NextToken calls)
	Rounds        int64 // scheduling rounds
	// DecodeNS is the time spent in the runtime's NextToken; PrepareNS in rendering, the
	// special-text and boundary checks and tokenizing (nanoseconds).
	DecodeNS, PrepareNS int64
}

// Stats returns the Decider's totals.
func (d *Decider) Stats() DeciderStats {
	return DeciderStats{
		Rows: d.stats.rows.Load(), Prompts: d.stats.prompts.Load(), PromptTokens: d.stats.promptTokens.Load(),
		DecodedTokens: d.stats.decodedTokens.Load(), Decodes: d.stats.decodes.Load(), Rounds: d.stats.rounds.Load(),
		DecodeNS: d.stats.decodeNS.Load(), PrepareNS: d.stats.prepareNS.Load(),
	}
}

// Decide decides one row. It validates the row (contract.Row.Validate), renders and checks
// its prompt(s) in the calling goroutine, hands them to the scheduler, which decodes them
// together with other requests' prompts, and waits. Errors are per row and never affect other
// requests: contract.ErrRow (bad options), contract.ErrBoundary, backend.ErrPromptTooLong,
// backend.ErrSpecialText, debias.ErrNoPrior, runtime errors; a cancelled ctx returns at once
// with an error wrapping ctx.Err(); a closed Decider gives ErrClosed.
func (d *Decider) Decide(ctx context.Context, row Row) (*Result, error) {
	c, err := d.Begin(ctx, row)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx)
}

// Call is a decision begun by Begin and not yet waited for. Wait may be called once, from any
// goroutine.
type Call struct {
	d *Decider
	r *request
}

// Begin is the first half of Decide: it validates the row, renders and checks its prompt(s)
// in the calling goroutine and hands them to the scheduler, which serves requests oldest
// first, in the order they were begun (Begin, Decide or DecideAll). A caller that reads rows
// in order and waits for them concurrently (batch.Run) calls Begin in input order, so the
// first row is decoded first whatever the goroutines do. Errors are Decide's for this row.
func (d *Decider) Begin(ctx context.Context, row Row) (*Call, error) {
	r, err := d.begin(ctx, row, d.opts.Debias, d.opts.Permute)
	if err != nil {
		return nil, err
	}
	return &Call{d: d, r: r}, nil
}

// Wait waits for a begun decision and returns its Result, with Decide's errors; a cancelled
// ctx returns at once with an error wrapping ctx.Err().
func (c *Call) Wait(ctx context.Context) (*Result, error) {
	return c.d.end(ctx, c.r)
}

// Outcome is one row's Result or error, as DecideAll returns them.
type Outcome struct {
	Result *Result
	Err    error
}

// DecideAll decides rows together and returns one Outcome per row, in input order. Rows are
// prepared in order and handed to the scheduler as they are ready, so rows next to each other
// share decodes. A bad row is that row's Outcome.Err. The error is non-nil only when ctx was
// cancelled (it wraps ctx.Err(); rows not finished then carry the same error) or the Decider
// was closed.
func (d *Decider) DecideAll(ctx context.Context, rows []Row) ([]Outcome, error) {
	out := make([]Outcome, len(rows))
	calls := make([]*Call, len(rows))
	d.preparingAdd(int64(len(rows)))
	for i, row := range rows {
		if err := ctx.Err(); err != nil {
			for k := i; k < len(rows); k++ {
				out[k].Err = fmt.Errorf("gojev: %w", err)
			}
			d.preparingAdd(-int64(len(rows) - i))
			break
		}
		calls[i], out[i].Err = d.Begin(ctx, row)
		d.preparingAdd(-1)
	}
	for i, c := range calls {
		if c != nil {
			out[i].Result, out[i].Err = c.Wait(ctx)
		}
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("gojev: %w", err)
	}
	d.closeMu.Lock()
	closed := d.closed
	d.closeMu.Unlock()
	if closed {
		return out, fmt.Errorf("gojev: %w", ErrClosed)
	}
	return out, nil
}

// preparingAdd moves the count of rows being prepared, signalling prepared at zero.
func (d *Decider) preparingAdd(n int64) {
	if d.preparing.Add(n) == 0 {
		select {
		case d.prepared <- struct{}{}:
		default:
		}
	}
}

// templateDate formats the template clock as results record it: "2006-01-02" when it is a
// midnight, RFC 3339 otherwise.
func templateDate(t time.Time) string {
	if t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	return t.Format(time.RFC3339)
}

// DefaultDetectThreshold is the p_yes at or above which the injection detector flags a row
// (Options.DetectThreshold 0).
const DefaultDetectThreshold = 0.5

// Suspicion is the injection detector's readout of one row's evidence (Options.Detect): its
// own prompt (contract.DetectMessages, prompt_version injection-check-v1), read as the binary
// contract reads an answer (p_yes over every single-token spelling of yes and no).
type Suspicion struct {
	PromptVersion string `json:"prompt_version"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	contract.BinaryScore
	// Threshold is the p_yes at or above which the row is Flagged; Abstain is set when a
	// flagged row abstains (Options.AbstainOnSuspect).
	Threshold float64 `json:"threshold"`
	Flagged   bool    `json:"flagged"`
	Abstain   bool    `json:"abstain,omitempty"`
}
