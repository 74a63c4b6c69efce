package gojev

import (
	"context"
	"runtime"
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
	// bslotsErr is why the model has no yes/no slots (contract.ErrBinarySlot), for a Decider
	// whose contract does not need them: its noul questions fail with it.
	bslotsErr error
	check     Check
	// markUncalibrated: the Decider runs under the default settings, so a result that no
	// calibration covers says so (Result.Uncalibrated).
	markUncalibrated bool

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
	// preparers holds a slot for each row being prepared on its own goroutine (Begin, when
	// preparing overlaps decoding): max(2, GOMAXPROCS) at once.
	preparers chan struct{}
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
	// queued counts the prompts handed to the scheduler and not yet read out or dropped
	// (Queued).
	queued atomic.Int64

	// prior is PriDe's letter prior (Options.Prior, SetPrior); contentFree caches contextual
	// calibration's content-free p_yes per question and candidate ([]float64, one per
	// debias.ContentFreeEvidence).
	prior       atomic.Pointer[debias.Prior]
	contentFree sync.Map
	// levels are the rubrics' content-free readings (startLevels), by levelsKey.
	levels flights[[]float64]
	// embeddings are the texts' hidden states the shortlist's ranker read (startEmbedding).
	embeddings flights[[]float32]

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
	opts = opts.following(opts.Calibration).settleMany(rt)
	d := &Decider{opts: opts, rt: rt, markUncalibrated: opts.Calibration == nil && opts.Debias == debias.Default}
	if err := d.startupChecks(ctx); err != nil {
		return nil, err
	}
	d.submit = make(chan *job, 64)
	d.prepared = make(chan struct{}, 1)
	d.serial = decodesOnCPU(rt)
	d.preparers = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))
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

// Options returns the options the Decider was made with, as New settled them: the default
// bias control following a calibration profile (debias.None where it holds only the raw
// scores' map), the shipped profile where one serves the model, KnockoutOptions.Method
// ManyShortlist or ManyBinary for the runtime.
func (d *Decider) Options() Options { return d.opts }

// Runtime returns the runtime the Decider decides on (a *backend.InProcess after Open).
func (d *Decider) Runtime() backend.Backend { return d.rt }

// Check returns what the start-up checks found; a Decider exists only if they passed.
func (d *Decider) Check() Check { return d.check }

// Stats are a Decider's totals since New (Decider.Stats; RowStats are one row's).
type Stats struct {
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
func (d *Decider) Stats() Stats {
	return Stats{
		Rows: d.stats.rows.Load(), Prompts: d.stats.prompts.Load(), PromptTokens: d.stats.promptTokens.Load(),
		DecodedTokens: d.stats.decodedTokens.Load(), Decodes: d.stats.decodes.Load(), Rounds: d.stats.rounds.Load(),
		DecodeNS: d.stats.decodeNS.Load(), PrepareNS: d.stats.prepareNS.Load(),
	}
}

// Queued is how many prompts wait in the scheduler now: handed to it (Decide, Ask, ...) and
// neither read out nor dropped (a cancelled request's) yet. A server's queue depth.
func (d *Decider) Queued() int64 { return d.queued.Load() }

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
