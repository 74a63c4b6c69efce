package main

import (
	"cmp"
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
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/cli"
)

const decideSynopsis = `Usage: jev decide [-m MODEL.gguf] [-i rows.jsonl] [-o out.jsonl] [--contract binary] [--debias none|pride|contextual] [flags]

Decides every row under the direct-options-v1 contract (or --contract binary:
binary-candidates-v1) and writes one JSON line per input line, in input order: the chosen
option, each option's logit, logprob and probability (binary: each candidate's p_yes, yes/no
logits and logprobs, rank and its own prompt_sha256), the prompt_version, the prompt_sha256,
and the backend, renderer and template_date; on a terminal (or with --format text), one
readable line per row instead: id, chosen option, its probability, and ✓/✗ against the label.
--window rows are decided at once, and in-process the tokens their prompts share (system
prompt, template head, a row's evidence for its binary candidates) are decoded only once; the
results are bit-identical to deciding each prompt alone. --runtime URL decides through a
llama-server instead, every contract and bias control included. A row of 17 to 256 options is
decided by shortlist: every option is ranked by embedding and only the best 16 (--shortlist)
are read under the binary contract (on 77 options 4.5 times faster than reading every option,
and measured at least as accurate; the default model's shipped profile calibrates it); over
--runtime URL, which reads no hidden states, and with --many binary, every option is read under
the binary contract, one prompt each; with --many knockout, in passes of at most 16
(--knockout-grouping). The shortlist's and the knockout's records add a distribution over all
the options; docs/many-options.md compares the three. A bad row (malformed JSON, a missing
field, 0 or more than 256 options, duplicate option ids, a label that is not an option id, a
prompt longer than n_ctx, content containing special-token text) gets {"id": ..., "line": N, "error": "..."} and
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

The defaults (no bias flag): PriDe wherever a prior for the row's option count is at hand, read
from the store (~/.cache/gojev/priors, $GOJEV_PRIORS) where an earlier run kept one, else
estimated from this input when its sample is at most half the rows of that count (then kept),
else the prior gojev ships for the default model, else the raw scores for those rows (the
summary names their option counts); and the default model's shipped calibration where it
covers the row's option count. A record no calibration covers says "uncalibrated": true.
--debias none gives the raw scores, uncalibrated.

Position bias (the raw scores stay in every record; the debiased ones are added):
  --debias pride      PriDe estimated on this input whatever is stored: a letter prior from
                      5 % of the rows (at least 10) under all cyclic permutations of their
                      options, no labels needed; then one decode per row (about
                      1 + 0.05(k-1) times the raw cost on a large file; on a small file the
                      10 sampled rows dominate). --prior FILE saves it, or reads it when the
                      file exists.
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
	fs := cli.NewFlagSet("decide")
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
	cli.String(fs, &in, "i,input", "", "rows `file` (JSONL; default stdin)")
	cli.String(fs, &out, "o,output", "", "results `file` (JSONL; default stdout); a run file <file>.run.json beside it records the model, flags, prior and timing for jev report")
	cli.String(fs, &format, "format", "", "output `format`: text (one readable line per row) or jsonl (default: text when writing to a terminal, else jsonl)")
	cli.Bool(fs, &quiet, "q,quiet", "no progress bar, no summary, no warnings")
	cli.String(fs, &contractName, "contract", "direct", "prompt `contract`: direct (direct-options-v1: one prompt, the letter of an option) or binary (binary-candidates-v1: one yes/no prompt per option, ranked by p_yes); guarded (direct-options-guarded-v1: the seed's guard sentence in the system text) or spotlight (direct-options-spotlight-v1: the evidence datamarked, Hines et al. 2024) for untrusted evidence")
	bf.register(fs)
	cf.register(fs)
	df.register(fs)
	kf.register(fs)
	cli.Int(fs, &window, "window", 32, "`rows` decided at once: read ahead so their shared prefixes are decoded once (results stay in input order)")
	cli.Bool(fs, &resume, "resume", "continue an interrupted run into the existing -o file: keep its records, skip the rows they name, append the rest")
	cli.String(fs, &shardSpec, "shard", "", "decide only shard `I/N` of the input (I from 0): the lines L with (L-1) mod N = I; auto takes I and N from a Slurm array task or a Kubernetes Indexed Job; {shard} in -o becomes I; jev merge joins the parts")
	if err := cli.Parse(fs, args, stderr, decideSynopsis); err != nil {
		return err
	}
	cf.seen(fs)
	part, err := batch.ParseShard(shardSpec, os.Getenv)
	if err != nil {
		return cli.Usage(err)
	}
	if out, err = part.Path(out); err != nil {
		return cli.Usage(fmt.Errorf("-o %w", err))
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
	reading, err := scoreReading(bf.reading)
	if err != nil {
		return err
	}
	opts := gojev.Options{Contract: c, Debias: method, Permute: bf.permuteN, ScoreReading: reading}
	if err := df.apply(&opts); err != nil {
		return err
	}
	if err := kf.apply(&opts); err != nil {
		return err
	}
	prof, err := cf.load(opts, stderr, "decide")
	if err != nil {
		return err
	}
	opts.Calibration = prof
	r, closeIn, err := openInput(in, stdin)
	if err != nil {
		return err
	}
	defer closeIn()
	if out == "-" {
		out = ""
	}
	toTerminal := out == "" && isTerminal(stdout)
	var text bool
	switch format {
	case "":
		text = toTerminal
	case "text":
		text = true
	case "jsonl":
	default:
		return cli.Usage(fmt.Errorf("--format %q: want text or jsonl", format))
	}
	if text && resume {
		return cli.Usage(errors.New("--resume continues a JSONL results file: drop --format text"))
	}
	if resume && out == "" {
		return cli.Usage(errors.New("--resume needs the results file of the run to continue: -o FILE"))
	}
	if err := cf.threshold(prof, &opts, stderr, quiet, "decide"); err != nil {
		return err
	}

	job := &batch.Job{Input: in, In: r, Output: out, Out: stdout, Resume: resume, Shard: part, Window: window, Options: opts,
		PriorFile: bf.priorFile, SampleFraction: bf.sampleFrac, SampleMinRows: bf.sampleMinRn, PriorOnly: bf.priorOnly, CalibrationFile: cf.profile,
		RunFile: batch.RunFile{Args: args, NThreads: mf.threads},
		Open:    func(ctx context.Context, o gojev.Options) (*gojev.Decider, error) { return mf.open(ctx, stderr, o) }}
	if text {
		job.Encode = textLines(toTerminal)
	}
	sum := summary{part: part, abstaining: opts.AbstainBelow > 0 || opts.AbstainOnSuspect, detecting: opts.Detect, maxError: cf.maxError,
		ownProfile: opts.Calibration != nil}
	var bar *progressbar.ProgressBar
	started := false
	// Under PriDe the rows were read (spooled) before the run starts: no stdin hint then.
	stdinHint := in == "" && isTerminal(r) && method != debias.PriDe && method != debias.Default
	job.OnStart = func(s batch.Start) {
		started = true
		if !quiet {
			bar = startMessages(stderr, s, out, text, stdinHint, cmp.Or(in, "stdin"), window)
		}
	}
	if !quiet {
		sum.warn = stderr
		job.OnPrior = func(ev batch.PriorEvent) { bf.report(stderr, ev, cf.profile) }
		job.OnPriorProgress = func(done, total int) { bf.progress(stderr, done, total) }
	}
	job.OnRecord = func(_ any, s *batch.Summary) {
		if bar != nil {
			_ = bar.Add(1)
		}
		sum.Summary = *s
		sum.checkSkew()
	}
	sum.Summary, err = job.Run(ctx)
	if bar != nil {
		_ = bar.Finish()
	}
	if errors.As(err, new(*batch.SetupError)) {
		return setupUsage(err)
	}
	if started && !quiet {
		sum.print(stderr)
	}
	if err != nil && ctx.Err() != nil && out != "" {
		err = fmt.Errorf("%w (the output holds whole lines; rerun with --resume to continue)", err)
	}
	return err
}

// jobFlags names the flag of each batch.Job field a batch.SetupError names.
var jobFlags = map[string]string{"Output": "-o", "Resume": "--resume", "PriorFile": "--prior", "Calibration": "--calibration"}

// setupUsage turns a batch.SetupError into the usage error of the flag behind its field (exit
// code 2); other errors stay as they are.
func setupUsage(err error) error {
	var se *batch.SetupError
	if errors.As(err, &se) {
		return cli.Usage(fmt.Errorf("%s %w", jobFlags[se.Field], se.Err))
	}
	return err
}

// startMessages says what a run is about to do once batch.Job has checked everything: what a
// resumed run kept, where rows come from when stdin is a terminal, and that text lines print
// as rows are decided; it returns the progress bar (nil when stderr is not a terminal or the
// output is text).
func startMessages(stderr io.Writer, s batch.Start, out string, text, stdinHint bool, src string, window int) *progressbar.ProgressBar {
	if s.Resume != nil {
		reportResume(stderr, out, s.Resume)
	}
	if stdinHint {
		fmt.Fprintln(stderr, "jev decide: reading rows from stdin (one JSON object a line; Ctrl-D ends); -i FILE reads a file")
	}
	if !isTerminal(stderr) {
		return nil
	}
	if text {
		// No progress bar beside the lines: say that work has started, since the first line
		// waits for its row and every row decided with it.
		fmt.Fprintf(stderr, "jev decide: deciding the rows of %s, %d at a time; each line prints once it and the rows before it are decided\n", src, window)
		return nil
	}
	n, ok := s.Rows()
	if !ok {
		n = -1 // a spinner with a count
	}
	return newBar(stderr, int64(n), "deciding", "rows")
}

// newBar is jev's progress bar on a terminal w: what it does, a count of max units (-1: not
// known), the rate, cleared when finished.
func newBar(w io.Writer, max int64, what, unit string) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
}

// summary is a run's batch.Summary with what jev prints beside it: the shard, whether the run
// abstains or detects, and the letter-skew warning (once, to warn).
type summary struct {
	batch.Summary
	part       batch.Shard // the shard decided (zero: the whole input)
	abstaining bool
	detecting  bool
	maxError   float64   // --max-error in force (0: none)
	ownProfile bool      // --calibration FILE (else the shipped profile, if any)
	warn       io.Writer // where the letter-skew warning goes (nil: nowhere)
	cmd        string    // the command the warning names (default "jev decide")
	warned     bool
}

// checkSkew warns once when the choices are skewed to one letter (batch.Summary.Skewed).
func (s *summary) checkSkew() {
	if s.warned || s.warn == nil {
		return
	}
	letter, n, skewed := s.Skewed()
	if !skewed {
		return
	}
	s.warned = true
	remedy := "--debias pride (label-free position-bias control: one decode a row once its prior is estimated) or --permute cyclic (k decodes a row)"
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
		what := "labelled"
		switch {
		case s.Typed > 0 && s.Typed == s.Decided:
			what = "labelled questions"
		case s.Typed > 0:
			what = "labelled rows and questions"
		}
		fmt.Fprintf(w, ", accuracy %.1f%% (%d/%d %s)", 100*float64(s.Correct)/float64(s.Labelled), s.Correct, s.Labelled, what)
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
	// The shipped profile is fitted across tasks, so most files differ from its fitting rows:
	// that matters where its probabilities choose what to answer.
	if s.ownProfile || s.abstaining {
		warnShift(w, "", s.Shift, s.maxError)
	}
}

// warnShift says on w, after prefix, that a calibrated run's rows are not drawn like its
// profile's fitting rows, and that --max-error's bound (maxError > 0) does not hold for them;
// nothing when sh is nil or found no shift.
func warnShift(w io.Writer, prefix string, sh *calibrate.Shift, maxError float64) {
	if sh == nil || !sh.Shifted {
		return
	}
	fmt.Fprintf(w, "%swarning: these rows are not drawn like the calibration profile's fitting rows: %s; its probabilities need not hold for them", prefix, sh.Why)
	if maxError > 0 {
		fmt.Fprintf(w, ", and --max-error %.3g's bound does not hold for this file", maxError)
	}
	fmt.Fprintln(w, ": fit a profile on labelled rows of this kind (jev calibrate)")
}

func openInput(path string, stdin io.Reader) (io.Reader, func(), error) {
	if path == "" || path == "-" {
		return stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, cli.Usage(err)
	}
	return f, func() { _ = f.Close() }, nil
}

// isTerminal reports whether v (stdin, stdout, stderr) is a terminal.
func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
