package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/debias"
)

const decideSynopsis = `Usage: jev decide [-m MODEL.gguf] [-i rows.jsonl] [-o out.jsonl] [--contract binary] [--debias pride] [flags]

Decides every row under the direct-options-v1 contract (or --contract binary:
binary-candidates-v1) and writes one JSON line per input line, in input order: the chosen
option, each option's logit, logprob and probability (binary: each candidate's p_yes, yes/no
logits and logprobs, rank and its own prompt_sha256), the prompt_version, the prompt_sha256,
and the backend, renderer and template_date; on a terminal (or with --format text), one
readable line per row instead: id, chosen option, its probability, and ✓/✗ against the label.
--window rows are decided at once, and in-process the tokens their prompts share (system
prompt, template head, a row's evidence for its binary candidates) are decoded only once; the
results are bit-identical to deciding each prompt alone. --runtime URL decides through a
llama-server instead, every contract and bias control included. A row of 17 to 256 options is decided in
passes of at most 16 (a knockout: --knockout-grouping; its record lists every pass and a
distribution over all the options). A bad row (malformed JSON, a missing field, 0 or more
than 256 options, duplicate option ids, a label that is not an option id, a prompt longer than
n_ctx, content containing special-token text) gets {"id": ..., "line": N, "error": "..."} and
the run goes on. A summary (rows, errors, accuracy where rows have a "label", the most chosen
letter, decisions/s) goes to stderr, and a warning when one letter takes 80 % of 20 or more
choices. Ctrl-C (or SIGTERM) stops the run: the rows in flight (at most --window)
are dropped, and the output holds only whole lines, every row before them decided.

--resume continues an interrupted run: with the same -i and -o, it keeps the records already
in the -o file (dropping a last line cut short by a crash), skips every input row that has one
(matched by line number, and refusing a file whose record at a line names another id) and
appends the records of the rest, so that each input line ends up with exactly one output line.

Every record carries its input line number ("line"). --shard I/N decides only shard I of N
(I from 0): the lines L with (L-1) mod N = I, so N runs partition the file whatever it holds;
--shard auto takes I and N from a Slurm array task (SLURM_ARRAY_TASK_ID - _MIN, _COUNT; _MAX
to refuse a stepped array) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX, and
JEV_SHARD_COUNT set to its completions), and fails outside one. {shard} in -o becomes I;
--resume continues a shard's own file (refusing a file another shard, model or bias control
wrote); jev merge joins the parts in input order and checks that every line is there once:
  jev decide --shard auto --resume -i rows.jsonl -o 'out/part-{shard}.jsonl'
  jev merge -i rows.jsonl 'out/part-*.jsonl' -o merged.jsonl
With --debias pride every shard reads one --prior FILE, estimated beforehand with --prior-only.

Position bias (the raw scores stay in every record; the debiased ones are added):
  --debias pride      PriDe: a letter prior estimated from 5 % of the rows (at least 10) under
                      all cyclic permutations of their options, no labels needed; then one
                      decode per row (about 1 + 0.05(k-1) times the raw cost on a large file;
                      on a small file the 10 sampled rows dominate). --prior FILE saves it, or
                      reads it when the file exists.
  --permute cyclic    every row under all k cyclic permutations, averaged (k times the cost).
  --permute N         N evenly spaced cyclic permutations (N times the cost); with --debias
                      pride the prior is divided out of each before averaging.
  --debias contextual with --contract binary: p_yes calibrated against content-free evidence.

Calibrated probabilities and abstention (jev calibrate fits a profile from labelled results):
  --calibration FILE  "probability" becomes the calibrated probability of the choice, and a
                      "calibration" object gives the map, its parameters, the profile's sha256
                      and every option's calibrated probability; the raw fields and the choices
                      stay. A profile of another model, contract or scoring is refused.
  --max-error E       abstain below the threshold that keeps the error rate of the rows answered
                      at most E with --confidence (default 0.9), chosen on the profile's fitting
                      rows; --abstain-below P sets the threshold by hand. Abstained rows keep
                      their choice and get "abstained": true; the summary gives the coverage
                      (the share of decisions answered, not abstained).`

func runDecide(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("decide")
	var mf modelFlags
	mf.register(fs)
	mf.registerDecoding(fs)
	var in, out, format string
	var quiet, resume bool
	var contractName, shardSpec string
	var window int
	var bf biasFlags
	var cf calibrationFlags
	var df detectFlags
	var kf knockoutFlags
	stringFlag(fs, &in, "i,input", "", "rows `file` (JSONL; default stdin)")
	stringFlag(fs, &out, "o,output", "", "results `file` (JSONL; default stdout); a run file <file>.run.json beside it records the model, flags, prior and timing for jev report")
	stringFlag(fs, &format, "format", "", "output `format`: text (one readable line per row) or jsonl (default: text when writing to a terminal, else jsonl)")
	boolFlag(fs, &quiet, "q,quiet", "no progress bar, no summary, no warnings")
	stringFlag(fs, &contractName, "contract", "direct", "prompt `contract`: direct (direct-options-v1: one prompt, the letter of an option) or binary (binary-candidates-v1: one yes/no prompt per option, ranked by p_yes)")
	bf.register(fs)
	cf.register(fs)
	df.register(fs)
	kf.register(fs)
	intFlag(fs, &window, "window", 32, "`rows` decided at once: read ahead so their shared prefixes are decoded once (results stay in input order)")
	boolFlag(fs, &resume, "resume", "continue an interrupted run into the existing -o file: keep its records, skip the rows they name, append the rest")
	stringFlag(fs, &shardSpec, "shard", "", "decide only shard `I/N` of the input (I from 0): the lines L with (L-1) mod N = I; auto takes I and N from a Slurm array task or a Kubernetes Indexed Job; {shard} in -o becomes I; jev merge joins the parts")
	if err := parseFlags(fs, args, stderr, decideSynopsis); err != nil {
		return err
	}
	cf.seen(fs)
	part, err := batch.ParseShard(shardSpec, os.Getenv)
	if err != nil {
		return usageError{err}
	}
	if out, err = part.Path(out); err != nil {
		return usageError{fmt.Errorf("-o %w", err)}
	}
	c, err := parseContract(contractName)
	if err != nil {
		return err
	}
	method, err := bf.method(c)
	if err != nil {
		return err
	}
	if err := bf.checkShard(method, part, out, resume); err != nil {
		return err
	}
	opts := gojev.Options{Contract: c, Debias: method, Permute: bf.permuteN}
	if err := df.apply(&opts); err != nil {
		return err
	}
	if err := kf.apply(&opts); err != nil {
		return err
	}
	prof, err := cf.load(opts)
	if err != nil {
		return err
	}
	opts.Calibration = prof
	r, closeIn, err := openInput(in, stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	toTerminal := out == "" || out == "-"
	if toTerminal {
		f, ok := stdout.(*os.File)
		toTerminal = ok && term.IsTerminal(int(f.Fd()))
	}
	var text bool
	switch format {
	case "":
		text = toTerminal
	case "text":
		text = true
	case "jsonl":
	default:
		return usageError{fmt.Errorf("--format %q: want text or jsonl", format)}
	}
	if text && resume {
		return usageError{errors.New("--resume continues a JSONL results file: drop --format text")}
	}

	// PriDe reads the rows twice before deciding (its sample first): stdin is spooled.
	if method == debias.PriDe {
		f, cleanup, err := spoolInput(r)
		if err != nil {
			return err
		}
		defer cleanup()
		r = f
	}
	var w io.Writer
	var closeOut func() error
	emptyOut := func() error { return nil }
	var skip func(line []byte, lineNo int) (bool, error)
	var done *batch.Resume // what a resumed run's file holds
	// A resumed run reads the run file of the run it continues: a PriDe run reuses its prior,
	// so every row of the output is debiased with the same prior, and a shard must be the one
	// that wrote the file.
	metaPath := ""
	var prev *batch.RunFile
	if out != "" && out != "-" {
		metaPath = batch.RunFilePath(out)
		if resume {
			var err error
			switch prev, err = batch.ReadRunFile(metaPath); {
			case errors.Is(err, os.ErrNotExist):
				prev = nil // a run killed before it wrote one: nothing to compare
			case err != nil:
				return usageError{fmt.Errorf("--resume %s: %w: it records the shard, model and flags the records kept were decided with, so the run cannot check that it continues them alike (restore it, or remove it to resume without the checks)", out, err)}
			}
		}
	}
	if prev != nil && prev.Shard != part.Spec() {
		return usageError{fmt.Errorf("--resume %s: its run file says it holds %s, and this run is %s: give the same --shard as the run that wrote it", out, batch.ShardWords(prev.Shard), batch.ShardWords(part.Spec()))}
	}
	switch {
	case bf.priorOnly:
		w, closeOut = io.Discard, func() error { return nil }
	case resume:
		if out == "" || out == "-" {
			return usageError{errors.New("--resume needs the results file of the run to continue: -o FILE")}
		}
		if done, err = batch.OpenResume(out); err != nil {
			return usageError{fmt.Errorf("--resume: %w", err)}
		}
		w, closeOut = done, done.Close
		for _, l := range done.Lines() {
			if !part.Has(l) {
				_ = closeOut()
				return usageError{fmt.Errorf("--resume %s: it holds a record of input line %d, which is shard %d/%d's, not this shard's (%s): is -o another shard's file?", out, l, batch.ShardOf(l, part.N), part.N, part)}
			}
		}
		skip = done.Skip
	default:
		if w, closeOut, emptyOut, err = openOutput(out, stdout); err != nil {
			return usageError{err}
		}
	}
	outClosed := false
	defer func() {
		if !outClosed {
			_ = closeOut()
		}
	}()

	start := time.Now() // the run's wall time counts PriDe's estimation
	var prior *debias.Prior
	if method == debias.PriDe && prev != nil && prev.Prior != nil && bf.priorFile == "" {
		prior = prev.Prior
	}
	if err := cf.threshold(prof, &opts, stderr, quiet, "decide"); err != nil {
		return err
	}
	opts.Prior = prior
	dec, err := mf.open(ctx, stderr, opts)
	if err != nil {
		return err // a new run's -o is left as it was: emptied only once the model is ready
	}
	defer dec.Close()
	if err := emptyOut(); err != nil {
		return err
	}
	var decided map[int]gojev.Outcome // PriDe's estimation sample, decided already

	meta := &batch.RunFile{Jev: jevVersion(), LlamaCpp: llamaVersion(), Args: args, Input: in, PromptVersion: c.String(), Debias: method,
		NThreads: mf.threads, Started: time.Now().UTC(), Backend: dec.Check().Backend, Decode: dec.Check().Decode}
	if dec.Check().Decode != "" { // in-process
		meta.Devices, meta.Plugins = runtimeDevices(mf.nGPULayers)
	}
	meta.Shard = part.Spec()
	meta.Permute, meta.AbstainBelow = bf.permuteN, opts.AbstainBelow
	meta.Detect = df.meta(opts)
	meta.Knockout = kf.meta()
	if prof != nil {
		meta.Calibration = &batch.RunCalibration{File: cf.profile, SHA256: prof.SHA256}
	}
	if m := dec.Check().Model; m != nil {
		if metaPath != "" || method == debias.PriDe || prof != nil {
			id, err := batch.ModelIdentity(m.Path, m.Name)
			if err != nil {
				return err
			}
			meta.Model = &id
		}
	} else if method == debias.PriDe {
		// Over --runtime the weights are the server's: a prior is tied to its URL.
		meta.Model = &debias.ModelID{Name: mf.runtime}
	}
	if prof != nil && meta.Model != nil {
		if err := prof.Check(*meta.Model, c.String()); err != nil {
			return usageError{fmt.Errorf("--calibration %s: %w", cf.profile, err)}
		}
	}
	if method == debias.PriDe {
		if prior == nil {
			if prior, err = bf.loadPrior(*meta.Model, c.String()); err != nil {
				return err
			}
			from := bf.priorFile
			if prior == nil && bf.priorFile == "" && prof != nil && prof.Prior != nil {
				if err := prof.Prior.Check(*meta.Model, c.String()); err != nil {
					return usageError{fmt.Errorf("--calibration %s: its prior: %w", cf.profile, err)}
				}
				prior, from = prof.Prior, "the calibration profile "+cf.profile
			}
			if prior != nil {
				if !quiet {
					fmt.Fprintf(stderr, "jev decide: PriDe: prior read from %s: %s\n", from, formatPrior(prior))
				}
				dec.SetPrior(prior)
			}
		}
		if prior == nil {
			f := r.(*os.File)
			if prior, decided, err = estimatePrior(ctx, dec, f, &bf, *meta.Model, stderr, quiet); err != nil {
				return err
			}
			dec.SetPrior(prior)
			if bf.priorFile != "" {
				if err := prior.Save(bf.priorFile); err != nil {
					return fmt.Errorf("--prior: saving the prior: %w", err)
				}
				if !quiet {
					fmt.Fprintf(stderr, "jev decide: PriDe: prior saved to %s (reuse it with --prior for this model and contract)\n", bf.priorFile)
				}
			}
		}
		meta.Prior = prior
		if bf.priorOnly {
			return nil
		}
	}
	if prev != nil {
		// The records kept and those to come must be decided alike.
		if what := prev.Disagrees(meta); what != "" {
			return usageError{fmt.Errorf("--resume %s: this run has different %s than the run that wrote it (its run file %s): resume with the same model and flags, or start a new -o", out, what, metaPath)}
		}
	}
	if done != nil && !quiet {
		reportResume(stderr, out, done)
	}
	if metaPath != "" {
		if err := meta.Save(metaPath); err != nil {
			return fmt.Errorf("writing the run file: %w", err)
		}
	}

	if f, ok := r.(*os.File); ok && in == "" && term.IsTerminal(int(f.Fd())) && !quiet {
		fmt.Fprintln(stderr, "jev decide: reading rows from stdin (one JSON object a line; Ctrl-D ends); -i FILE reads a file")
	}
	var bar *progressbar.ProgressBar
	if !quiet && isTerminal(stderr) && !text {
		bar = progressbar.NewOptions64(-1, progressbar.OptionSetWriter(stderr), progressbar.OptionSetDescription("deciding"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rows"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		if f, ok := r.(*os.File); ok {
			if n, err := countLines(f); err == nil {
				bar.ChangeMax64(int64(part.Size(n)))
			}
		}
	}
	if text && !quiet && isTerminal(stderr) {
		// No progress bar beside the lines: say that work has started, since the first line
		// waits for its row and every row decided with it.
		src := in
		if src == "" {
			src = "stdin"
		}
		fmt.Fprintf(stderr, "jev decide: deciding the rows of %s, %d at a time; each line prints once it and the rows before it are decided\n", src, window)
	}
	sum := summary{part: part, abstaining: opts.AbstainBelow > 0 || opts.AbstainOnSuspect, detecting: opts.Detect}
	if !quiet {
		sum.warn = stderr
	}
	cfg := batch.Config{Window: window, Shard: part, Skip: skip, Decided: decided, OnRecord: func(_ any, s *batch.Summary) {
		if bar != nil {
			_ = bar.Add(1)
		}
		sum.Summary = *s
		sum.checkSkew()
	}}
	if text {
		cfg.Encode = textEncoder(isTerminal(w))
	}
	sum.Summary, err = batch.Run(ctx, dec, r, w, cfg)
	sum.Elapsed = time.Since(start) // PriDe's estimation included
	if bar != nil {
		_ = bar.Finish()
	}
	outClosed = true
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if !quiet {
		sum.print(stderr)
	}
	if metaPath != "" {
		meta.Finished = err == nil
		meta.ElapsedS = time.Since(meta.Started).Seconds()
		meta.Rows, meta.Decided, meta.Errors, meta.Skipped = sum.Rows, sum.Decided, sum.Errors, sum.Skipped
		if meta.ElapsedS > 0 {
			meta.DecisionsPerS = float64(sum.Decided) / meta.ElapsedS
		}
		if merr := meta.Save(metaPath); err == nil && merr != nil {
			err = fmt.Errorf("writing the run file: %w", merr)
		}
	}
	if err != nil && ctx.Err() != nil && out != "" {
		err = fmt.Errorf("%w (the output holds whole lines; rerun with --resume to continue)", err)
	}
	return err
}

// eachLine calls record for every input line (trimmed, with its 1-based number) and writes
// what it returns as one JSON line, with a single Write (nothing when it returns nil); a
// record that cannot be encoded (a NaN logit from a damaged model) becomes an error record.
// It stops at the end of the input, at the first error of record or of writing, or when ctx
// is done before a line starts.
func eachLine(ctx context.Context, r io.Reader, w io.Writer, encode recordEncoder, record func(line []byte, lineNo int) (any, error)) error {
	sc := batch.NewScanner(r)
	for sc.Scan() {
		l := sc.Line()
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped before line %d: %w", l.N, err)
		}
		rec, err := record(bytes.TrimSpace(l.Bytes), l.N)
		if err != nil {
			return err
		}
		if rec != nil {
			b, err := encode(rec)
			if err != nil {
				if b, err = encode(batch.UnencodableRecord(rec, l.N, err)); err != nil {
					return err
				}
			}
			if _, err := w.Write(b); err != nil {
				return fmt.Errorf("writing results: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading rows: %w", err)
	}
	return nil
}

// Letter-skew warning: after skewMinRows decisions, if one letter holds skewShare of the
// choices, jev decide warns once on stderr.
const (
	skewMinRows = 20
	skewShare   = 0.8
)

// summary is a run's batch.Summary with what jev prints beside it: the shard, whether the run
// abstains or detects, and the letter-skew warning (once, to warn).
type summary struct {
	batch.Summary
	part       batch.Shard // the shard decided (zero: the whole input)
	abstaining bool
	detecting  bool
	warn       io.Writer // where the letter-skew warning goes (nil: nowhere)
	cmd        string    // the command the warning names (default "jev decide")
	warned     bool
}

// checkSkew warns once when one answer letter takes skewShare of ≥ skewMinRows choices.
func (s *summary) checkSkew() {
	if s.warned || s.warn == nil || s.Lettered < skewMinRows {
		return
	}
	letter, n := s.TopLetter()
	if float64(n) < skewShare*float64(s.Lettered) {
		return
	}
	s.warned = true
	remedy := "--debias pride (label-free position-bias control, about 1.25x the time) or --permute cyclic (k x the time)"
	if s.Debiased {
		remedy = "--permute cyclic, or a larger model"
	} else {
		remedy += ", or a larger model"
	}
	cmd := s.cmd
	if cmd == "" {
		cmd = "jev decide"
	}
	fmt.Fprintf(s.warn, "%s: warning: %d of the first %d choices (%.0f%%) are letter %s: the model is choosing a position, not an option. Try %s.\n",
		cmd, n, s.Lettered, 100*float64(n)/float64(s.Lettered), letter, remedy)
}

func (s *summary) print(w io.Writer) {
	secs := s.Elapsed.Seconds()
	if !s.part.All() {
		fmt.Fprintf(w, "shard %s: ", s.part)
	}
	fmt.Fprintf(w, "rows %d, decided %d, errors %d", s.Rows, s.Decided, s.Errors)
	if s.Skipped > 0 {
		fmt.Fprintf(w, ", skipped %d already in the output", s.Skipped)
	}
	if s.Labelled > 0 {
		fmt.Fprintf(w, ", accuracy %.1f%% (%d/%d labelled)", 100*float64(s.Correct)/float64(s.Labelled), s.Correct, s.Labelled)
		if s.Debiased {
			fmt.Fprintf(w, ", raw %.1f%%", 100*float64(s.RawCorrect)/float64(s.Labelled))
		}
	}
	if s.detecting {
		fmt.Fprintf(w, ", flagged %d by the injection detector", s.Flagged)
	}
	if s.abstaining && s.Decided > 0 {
		fmt.Fprintf(w, ", abstained %d, answered %d: coverage %.1f%%", s.Abstained, s.Decided-s.Abstained, 100*float64(s.Decided-s.Abstained)/float64(s.Decided))
		if s.AnsweredLabelled > 0 {
			fmt.Fprintf(w, ", accuracy of the answered rows %.1f%% (%d/%d)", 100*float64(s.AnsweredCorrect)/float64(s.AnsweredLabelled), s.AnsweredCorrect, s.AnsweredLabelled)
		}
	}
	if s.Lettered > 0 {
		letter, n := s.TopLetter()
		fmt.Fprintf(w, ", most chosen letter %s %.0f%%", letter, 100*float64(n)/float64(s.Lettered))
	}
	if secs > 0 {
		fmt.Fprintf(w, ", %.2f decisions/s, %.0f prompt tokens/s, %.1fs", float64(s.Decided)/secs, float64(s.PromptTokens)/secs, secs)
	}
	fmt.Fprintln(w)
}

func openInput(path string, stdin io.Reader) (io.Reader, func(), error) {
	if path == "" || path == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return f, func() { _ = f.Close() }, nil
}

// openOutput opens the -o file of a new run (batch.Create), or stdout for "" and "-". empty
// truncates it, once the run can start (batch.Output.Start).
func openOutput(path string, stdout io.Writer) (w io.Writer, closeOut, empty func() error, err error) {
	if path == "" || path == "-" {
		none := func() error { return nil }
		return stdout, none, none, nil
	}
	o, err := batch.Create(path)
	if err != nil {
		return nil, nil, nil, err
	}
	return o, o.Close, o.Start, nil
}

// countLines counts the lines of a regular file (newlines, plus a last line without one) and
// rewinds it, for the progress bar.
func countLines(f *os.File) (int, error) {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0, errors.New("not a regular file")
	}
	n, last := 0, byte('\n')
	buf := make([]byte, 1<<20)
	for {
		k, err := f.Read(buf)
		if k > 0 {
			n += bytes.Count(buf[:k], []byte{'\n'})
			last = buf[k-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	_, err = f.Seek(0, io.SeekStart)
	return n, err
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
