package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/jsonl"
	"github.com/gojev/gojev/internal/version"
	"github.com/gojev/gojev/knockout"
)

// Job is one run of a rows file into a results file, as jev decide runs it: on Resume the
// previous run's run file is read and checked and its records kept; a new results file is
// emptied only once the model is ready; PriDe's prior comes from the run resumed, PriorFile,
// the calibration profile, or is estimated over the input's sample (and saved to PriorFile);
// the run file is written before the first row is decided and again at the end. jev decide
// is a Job with flags, messages and a progress bar around it, so a results file a program
// writes through Job is the file jev decide would write, and either can resume the other's.
//
// The zero Job is not ready: set Input (or In), Open (or Decider) and Options, and Output to
// get a run file and to resume.
type Job struct {
	// Input is the rows file (JSONL, one row a line). In, when set, is read instead of
	// opening Input (stdin, a pipe), and Input is only recorded in the run file. PriDe reads
	// the rows twice, so an In that is not a regular file is first copied to a temporary file.
	Input string
	In    io.Reader
	// Output is the results file. "" writes the records to Out (nil: discarded) with no run
	// file; Resume needs an Output.
	Output string
	Out    io.Writer
	// Resume continues the run that wrote Output (OpenResume): its records are kept and their
	// rows skipped. Its run file, when there is one, must be readable and agree with this run
	// (RunFile.Disagrees), and the records kept must be of this Shard.
	Resume bool
	// Shard is the part of the input to decide (the zero Shard: all of it). A shard never
	// estimates PriDe's prior of its own: it reads the one every shard shares from PriorFile.
	Shard Shard
	// Window is Config.Window: rows decided at once (0: DefaultWindow).
	Window int

	// Options are the decision options (contract, bias control, calibration, abstention,
	// injection detector, knockout). Run passes them to Open with Prior set when it is known
	// before the model is (the prior of the run resumed); the run file records them.
	Options gojev.Options
	// Open opens the Decider once the output is ready (gojev.Open, or gojev.New over another
	// runtime); Run closes it at the end. An error of Open is returned as it is.
	Open func(ctx context.Context, opts gojev.Options) (*gojev.Decider, error)
	// Decider, when Open is nil, is the Decider to decide with, opened beforehand with
	// Options and left open; under PriDe and without a PriorFile Run keeps the prior it has
	// (Decider.Prior), else finds one as below and sets it (Decider.SetPrior).
	Decider *gojev.Decider

	// PriorFile is PriDe's prior file: read when it exists (and checked against the model and
	// contract: a SetupError), else the estimated prior is saved there. Unused without PriDe.
	PriorFile string
	// SampleFraction and SampleMinRows size PriDe's estimation sample (priorSample); 0 means
	// debias.DefaultSampleFraction and debias.DefaultMinSampleRows.
	SampleFraction float64
	SampleMinRows  int
	// PriorOnly makes Run stop once PriDe's prior is known (read, or estimated and saved to
	// PriorFile), deciding nothing and opening no output.
	PriorOnly bool
	// CalibrationFile names the file Options.Calibration was read from, for the run file and
	// the errors that concern the profile.
	CalibrationFile string

	// RunFile holds the run file's fields that Run does not know: Args and NThreads. Run fills
	// in the rest: the versions, and the devices and plugins of an in-process runtime
	// (backend.InProcess.Devices), where they are empty; the model, contract, settings, shard,
	// prior, counts and times.
	RunFile RunFile

	// Encode and OnRecord are Config's: how a record becomes a line (nil: JSON lines), and
	// what to call after each input line of the shard is written or skipped.
	Encode   func(rec any) ([]byte, error)
	OnRecord func(rec any, sum *Summary)
	// OnPrior, when set, hears each step of finding PriDe's prior (for messages).
	OnPrior func(PriorEvent)
	// OnPriorProgress, when set, hears PriDe's estimation go on: after each sample row, the
	// prompts decoded so far and in all (gojev.WithPriorProgress), between the PriorEstimating
	// and PriorEstimated events.
	OnPriorProgress func(done, total int)
	// OnStart, when set, is called once everything is checked and the run file written, just
	// before the first row is decided.
	OnStart func(Start)
}

// SetupError is Job.Run refusing to start: a setting, or a file it names (the results file or
// run file of the run resumed, a prior file, the calibration profile), does not fit the job.
// Nothing was written, and the Output file is as it was. Field names the Job field concerned:
// "Output", "Resume", "PriorFile" or "Calibration" (Options.Calibration, CalibrationFile).
type SetupError struct {
	Field string
	Err   error
}

func (e *SetupError) Error() string { return "batch: " + e.Field + ": " + e.Err.Error() }

func (e *SetupError) Unwrap() error { return e.Err }

// PriorStep is a step of finding PriDe's prior in Job.Run.
type PriorStep int

const (
	// PriorFromFile: the prior was read from Job.PriorFile, or under debias.Default from the
	// store (Stored: debias.DefaultStore's File, and the priors gojev ships). The prior of the
	// run resumed, and one the caller gave in Options.Prior, are taken without an event.
	PriorFromFile PriorStep = iota
	// PriorFromProfile: the prior was read from the calibration profile
	// (Options.Calibration.Prior).
	PriorFromProfile
	// PriorEstimating: the estimation starts on PriorEvent.SampleRows rows.
	PriorEstimating
	// PriorEstimated: the prior was estimated, in PriorEvent.Elapsed.
	PriorEstimated
	// PriorSaved: the estimated prior was saved to Job.PriorFile, or kept in the store
	// (Stored; File is the store's file).
	PriorSaved
	// PriorNone: under debias.Default, no prior is at hand for the option counts in Raw
	// (too few rows to estimate one, none stored): their rows get the raw scores.
	PriorNone
)

// PriorEvent is what Job.OnPrior hears.
type PriorEvent struct {
	Step PriorStep
	// Prior is the prior read or estimated (PriorFromFile, PriorFromProfile, PriorEstimated).
	Prior *debias.Prior
	// SampleRows is the estimation sample's rows, Prompts their cyclic permutations (the
	// prompts the estimation decodes), and Rows the input's valid rows of two or more options
	// the sample is drawn from (PriorEstimating).
	SampleRows, Prompts, Rows int
	// Elapsed is the estimation's wall time (PriorEstimated).
	Elapsed time.Duration
	// Stored, File: the prior was read from or kept in the store (debias.DefaultStore), in
	// File (PriorFromFile, PriorSaved under debias.Default).
	Stored bool
	File   string
	// Raw are the option counts without a prior (PriorNone).
	Raw []int
	// Err is a store that could not be read (PriorFromFile: passed over, the prior estimated
	// again) or written (PriorSaved); the run goes on.
	Err error
}

// Start is what Job.OnStart is told before the first row is decided.
type Start struct {
	// Resume is the results file continued (Records kept, Dropped bytes of a cut last line);
	// nil for a new run.
	Resume *Resume
	// RunFile is the run file as written (nil without Output).
	RunFile *RunFile
	in      io.Reader
	shard   Shard
}

// Rows counts the input lines of the run's shard, which the run writes or skips (a progress
// bar's total). It reads the input once and rewinds it, so it is for OnStart itself to call;
// ok is false when the input is not a regular file (stdin, a pipe).
func (s Start) Rows() (n int, ok bool) {
	f, isFile := s.in.(*os.File)
	if !isFile {
		return 0, false
	}
	lines, err := jsonl.CountLines(f)
	if err != nil {
		return 0, false
	}
	return s.shard.Size(lines), true
}

// Run runs the job: it checks what it is given before the model is opened (SetupError), opens
// the Decider, finds PriDe's prior, writes the run file, decides every row of the shard into
// the output (Run), and writes the run file again with the counts and times. The Summary's
// Elapsed counts the model's start and PriDe's estimation. The error is a SetupError, an
// error of Open, or an error of reading, deciding or writing (wrapped); a cancelled ctx stops
// the run as Run does, leaving whole lines to resume.
func (j *Job) Run(ctx context.Context) (Summary, error) {
	opts := j.Options
	if j.Decider != nil && j.Open == nil {
		opts = j.Decider.Options()
		if j.PriorFile == "" {
			opts.Prior = cmp.Or(j.Decider.Prior(), opts.Prior) // one set since Open (SetPrior)
		}
	}
	pride := opts.Debias == debias.PriDe
	auto := usesDefaultPrior(opts)
	if j.Open == nil && j.Decider == nil {
		return Summary{}, errors.New("batch: a Job needs Open or a Decider")
	}
	if j.Resume && j.Output == "" {
		return Summary{}, &SetupError{"Resume", errors.New("a resumed run needs its results file (Output)")}
	}
	in, closeIn, err := j.input(pride || auto)
	if err != nil {
		return Summary{}, err
	}
	defer closeIn()
	prev, err := j.previous()
	if err != nil {
		return Summary{}, err
	}
	out, err := j.output()
	if err != nil {
		return Summary{}, err
	}
	defer out.close()

	start := time.Now() // the run's wall time counts the model's start and PriDe's estimation
	if (pride || auto) && opts.Prior == nil && prev != nil && prev.Prior != nil && j.PriorFile == "" {
		opts.Prior = prev.Prior // every record of the file debiased with one prior
	}
	if opts.Knockout.Method == "" && prev != nil {
		// A resumed run keeps the scheme its records were decided by (a run file without one
		// was decided under the binary contract, the default before the shortlist).
		opts.Knockout.Method = prev.KnockoutOptions().Method
	}
	d, shipped := j.Decider, false
	if j.Open != nil {
		if d, err = j.Open(ctx, opts); err != nil {
			return Summary{}, err // a new Output is left as it was
		}
		defer d.Close()
	}
	// The default bias control follows a calibration profile of the raw scores, and the
	// default scheme for rows of many options the runtime (New settles both).
	opts.Debias, opts.Knockout.Method = d.Options().Debias, d.Options().Knockout.Method
	pride, auto = opts.Debias == debias.PriDe, usesDefaultPrior(opts)
	if opts.Calibration == nil && d.Options().Calibration != nil {
		opts.Calibration = d.Options().Calibration // the shipped default (calibrate.ShippedProfile)
		shipped = true
	}
	meta, err := j.newRunFile(d, opts, shipped)
	if err != nil {
		return Summary{}, err
	}
	var decided map[int]gojev.Outcome // PriDe's estimation sample, decided already
	if pride || auto {
		find := j.prior
		if auto {
			find = j.defaultPrior
		}
		if meta.Prior, decided, err = find(ctx, d, opts, in, *meta.Model); err != nil {
			return Summary{}, err
		}
		if j.PriorOnly {
			return Summary{}, nil
		}
	}
	if prev != nil {
		if out.resume != nil {
			// The runs before this one, so that a kill now keeps their totals; at most
			// the records the file kept count as decided.
			meta.Invocations = max(prev.Invocations, 1)
			meta.DecidedAll = min(cmp.Or(prev.DecidedAll, prev.Decided), out.resume.Records)
			meta.ElapsedAllS = cmp.Or(prev.ElapsedAllS, prev.ElapsedS)
		}
		// The records kept and those to come must be decided alike.
		if what := prev.Disagrees(meta); what != "" {
			return Summary{}, &SetupError{"Resume", fmt.Errorf("%s: this run has different %s than the run that wrote it (its run file %s): resume with the same model and settings, or start a new results file",
				j.Output, what, RunFilePath(j.Output))}
		}
	}
	if err := out.start(); err != nil {
		return Summary{}, err
	}
	if j.Output != "" {
		if err := meta.Save(RunFilePath(j.Output)); err != nil {
			return Summary{}, fmt.Errorf("writing the run file: %w", err)
		}
	}
	if j.OnStart != nil {
		s := Start{Resume: out.resume, in: in, shard: j.Shard}
		if j.Output != "" {
			s.RunFile = meta
		}
		j.OnStart(s)
	}
	cfg := Config{Window: j.Window, Shard: j.Shard, Decided: decided, Encode: j.Encode, OnRecord: j.OnRecord}
	if out.resume != nil {
		cfg.Skip = out.resume.Skip
	}
	sum, err := Run(ctx, d, in, out.w, cfg)
	sum.Elapsed = time.Since(start)
	sum.Shift = shiftOf(opts, sum.Served)
	meta.Shift = sum.Shift
	if cerr := out.close(); err == nil {
		err = cerr
	}
	if j.Output != "" && err == nil && prev != nil && prev.Finished && sum.Decided == 0 && sum.Errors == 0 {
		// A finished file resumed with nothing left: it is the run it was, and its run file
		// keeps that run's times and counts (not this no-op's, which would read as 0 rows/s).
		if merr := prev.Save(RunFilePath(j.Output)); merr != nil {
			err = fmt.Errorf("writing the run file: %w", merr)
		}
	} else if j.Output != "" {
		meta.Finished = err == nil
		meta.ElapsedS = time.Since(meta.Started).Seconds()
		meta.Rows, meta.Decided, meta.Errors, meta.Skipped = sum.Rows, sum.Decided, sum.Errors, sum.Skipped
		if meta.ElapsedS > 0 {
			meta.DecisionsPerS = float64(sum.Decided) / meta.ElapsedS
		}
		meta.Invocations++
		meta.DecidedAll += sum.Decided
		meta.ElapsedAllS += meta.ElapsedS
		if merr := meta.Save(RunFilePath(j.Output)); err == nil && merr != nil {
			err = fmt.Errorf("writing the run file: %w", merr)
		}
	}
	return sum, err
}

// input opens the rows: In, or the file Input. Under PriDe (which reads them twice) an In that
// is not a regular file is copied to a temporary file, which the returned function removes.
func (j *Job) input(pride bool) (io.Reader, func(), error) {
	r, closeIn := j.In, func() {}
	if r == nil {
		f, err := os.Open(j.Input)
		if err != nil {
			return nil, nil, err
		}
		r, closeIn = f, func() { _ = f.Close() }
	}
	if !pride {
		return r, closeIn, nil
	}
	f, cleanup, err := spool(r)
	if err != nil {
		closeIn()
		return nil, nil, err
	}
	return f, func() { cleanup(); closeIn() }, nil
}

// spool makes r a regular file that can be read more than once: an *os.File that is a regular
// file is returned as it is; anything else (stdin, a pipe) is copied to a temporary file,
// rewound, which the returned function closes and removes.
func spool(r io.Reader) (*os.File, func(), error) {
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			return f, func() {}, nil
		}
	}
	tmp, err := os.CreateTemp("", "gojev-rows-*.jsonl")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = tmp.Close(); _ = os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, r); err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("reading rows: %w", err)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		cleanup()
		return nil, nil, err
	}
	return tmp, cleanup, nil
}

// previous reads the run file of the run a Resume continues: nil when there is none (a run
// killed before it wrote one: nothing to compare), a SetupError when it cannot be read or
// names another shard.
func (j *Job) previous() (*RunFile, error) {
	if !j.Resume {
		return nil, nil
	}
	prev, err := RunFileOf(j.Output)
	switch {
	case err != nil:
		return nil, &SetupError{"Resume", fmt.Errorf("%s: %w: it records the shard, model and settings the records kept were decided with, so the run cannot check that it continues them alike (restore it, or remove it to resume without the checks)", j.Output, err)}
	case prev == nil:
		return nil, nil
	case prev.Shard != j.Shard.Spec():
		return nil, &SetupError{"Resume", fmt.Errorf("%s: its run file says it holds %s, and this run is %s: give the same shard (--shard) as the run that wrote it",
			j.Output, shardWords(prev.Shard), shardWords(j.Shard.Spec()))}
	}
	return prev, nil
}

// jobOutput is where a Job's records go.
type jobOutput struct {
	w      io.Writer
	resume *Resume // a resumed Output
	create *output // a new output, emptied by start
	closed bool
}

func (o *jobOutput) start() error {
	if o.create != nil {
		return o.create.Start()
	}
	return nil
}

func (o *jobOutput) close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	switch {
	case o.resume != nil:
		return o.resume.Close()
	case o.create != nil:
		return o.create.Close()
	}
	return nil
}

// output opens where the records go: nowhere for PriorOnly, the results file to continue on
// Resume (its records checked to be this shard's), a new results file (locked, not emptied
// yet), or Out.
func (j *Job) output() (*jobOutput, error) {
	switch {
	case j.PriorOnly:
		return &jobOutput{w: io.Discard}, nil
	case j.Resume:
		r, err := OpenResume(j.Output)
		if err != nil {
			return nil, &SetupError{"Resume", err}
		}
		for _, l := range r.Lines() {
			if !j.Shard.Has(l) {
				_ = r.Close()
				return nil, &SetupError{"Resume", fmt.Errorf("%s: it holds a record of input line %d, which is shard %d/%d's, not this shard's (%s): is it another shard's file?",
					j.Output, l, shardOf(l, j.Shard.N), j.Shard.N, j.Shard)}
			}
		}
		return &jobOutput{w: r, resume: r}, nil
	case j.Output != "":
		o, err := create(j.Output)
		if err != nil {
			return nil, &SetupError{"Output", err}
		}
		return &jobOutput{w: o, create: o}, nil
	}
	if j.Out == nil {
		return &jobOutput{w: io.Discard}, nil
	}
	return &jobOutput{w: j.Out}, nil
}

// newRunFile is the run file of the job on d: Job.RunFile with the model, the contract and
// settings, the runtime and the shard; it checks the calibration profile against the model.
// The model is hashed (gojev.ModelIdentity) only when something records or checks it.
func (j *Job) newRunFile(d *gojev.Decider, opts gojev.Options, shipped bool) (*RunFile, error) {
	meta := j.RunFile
	meta.Jev, meta.LlamaCpp = cmp.Or(meta.Jev, version.Jev()), cmp.Or(meta.LlamaCpp, version.LlamaCpp())
	c := d.Check()
	meta.SetOptions(opts)
	meta.Input, meta.Started, meta.Backend, meta.Decode, meta.Shard = j.Input, time.Now().UTC(), c.Backend, c.Decode, j.Shard.Spec()
	if rt, ok := d.Runtime().(backend.DeviceLister); ok && meta.Devices == nil {
		meta.Devices, meta.Plugins = rt.Devices() // backend.InProcess: the devices that decide
	}
	prof, pride := opts.Calibration, opts.Debias == debias.PriDe || usesDefaultPrior(opts)
	if prof != nil {
		meta.Calibration = &RunCalibration{File: j.CalibrationFile, SHA256: prof.SHA256}
		if shipped {
			meta.Calibration.File = shippedCalibration
		}
	}
	if m := c.Model; m != nil {
		if j.Output != "" || pride || prof != nil {
			id, err := gojev.ModelIdentity(m.Path, m.Name)
			if err != nil {
				return nil, err
			}
			meta.Model = &id
		}
	} else if pride {
		// Over another runtime the weights are the server's: a prior is tied to its URL.
		meta.Model = &debias.ModelID{Name: c.Backend}
	}
	if prof != nil && meta.Model != nil {
		if err := prof.Check(*meta.Model, meta.PromptVersion); err != nil {
			return nil, &SetupError{"Calibration", fmt.Errorf("%s: %w", j.profileName(), err)}
		}
	}
	return &meta, nil
}

func (j *Job) profileName() string { return cmp.Or(j.CalibrationFile, "the calibration profile") }

// runKnockout is what a run file records of the scheme for rows of more than 16 options: nil
// for ManyBinary with the knockout's defaults (so that a run file written before the
// shortlist was the default, which records none, reads as the binary contract it was decided
// under), else the settled options, the shortlist's k spelled out.
func runKnockout(k gojev.KnockoutOptions) *gojev.KnockoutOptions {
	if k = spelledOut(k); k.Method == gojev.ManyBinary && k.Grouping == knockout.Shuffle && k.Seed == 0 {
		return nil
	}
	return &k
}

// prior finds PriDe's prior for d and sets it: the one opts already carry (the run resumed,
// or the caller's), else PriorFile's, else the calibration profile's, else one estimated over
// in's sample (saved to PriorFile), whose sample rows' decisions it returns by input line.
func (j *Job) prior(ctx context.Context, d *gojev.Decider, opts gojev.Options, in io.Reader, model debias.ModelID) (*debias.Prior, map[int]gojev.Outcome, error) {
	if opts.Prior != nil {
		d.SetPrior(opts.Prior) // as Open had it; a Decider opened beforehand has not
		return opts.Prior, nil, nil
	}
	promptVersion := opts.Contract.String()
	prior, from, err := j.readPrior(opts, model, promptVersion)
	if err != nil {
		return nil, nil, err
	}
	if prior != nil {
		j.tell(PriorEvent{Step: from, Prior: prior})
		d.SetPrior(prior)
		return prior, nil, nil
	}
	if !j.Shard.All() {
		return nil, nil, &SetupError{"PriorFile", errors.New("a shard must not estimate a prior of its own: estimate it once over the whole input (PriorOnly) and give every shard that PriorFile")}
	}
	f, ok := in.(io.ReadSeeker) // input spooled it
	if !ok {
		return nil, nil, errors.New("PriDe: the estimation reads the rows twice, and the input cannot be rewound")
	}
	prior, byLine, err := j.estimate(ctx, d, f, model, nil)
	if err != nil {
		return nil, nil, err
	}
	d.SetPrior(prior)
	if j.PriorFile != "" {
		if err := prior.Save(j.PriorFile); err != nil {
			return nil, nil, fmt.Errorf("PriDe: saving the prior: %w", err)
		}
		j.tell(PriorEvent{Step: PriorSaved, Prior: prior})
	}
	return prior, byLine, nil
}

// readPriorFile reads PriDe's prior file at path for a model and contract (promptVersion): nil
// when the file does not exist yet (estimate one, then save it there), a SetupError (Field
// "PriorFile", wrapping debias.ErrPriorFile or ErrPriorMismatch) when it cannot be read or
// was estimated for another model or contract.
func readPriorFile(path string, model debias.ModelID, promptVersion string) (*debias.Prior, error) {
	p, err := debias.LoadPrior(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, &SetupError{"PriorFile", err}
	}
	if err := p.Check(model, promptVersion); err != nil {
		return nil, &SetupError{"PriorFile", fmt.Errorf("%s: %w; estimate a new one (another file name)", path, err)}
	}
	return p, nil
}

// readPrior reads PriorFile (nil when it does not exist yet), else the calibration profile's
// prior, each checked against the model and contract.
func (j *Job) readPrior(opts gojev.Options, model debias.ModelID, promptVersion string) (*debias.Prior, PriorStep, error) {
	if j.PriorFile != "" {
		p, err := readPriorFile(j.PriorFile, model, promptVersion)
		return p, PriorFromFile, err
	}
	if prof := opts.Calibration; prof != nil && prof.Prior != nil {
		if err := prof.Prior.Check(model, promptVersion); err != nil {
			return nil, 0, &SetupError{"Calibration", fmt.Errorf("%s: its prior: %w", j.profileName(), err)}
		}
		return prof.Prior, PriorFromProfile, nil
	}
	return nil, 0, nil
}

func (j *Job) tell(ev PriorEvent) {
	if j.OnPrior != nil {
		j.OnPrior(ev)
	}
}
