package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/cli"
)

// biasFlags are jev decide's bias-control flags.
type biasFlags struct {
	debias      string
	permute     string
	permuteN    int // --permute N (0: cyclic, all k)
	priorFile   string
	sampleFrac  float64
	sampleMinRn int
	priorOnly   bool
	reading     string // --score-reading

	estimating time.Time                // when PriDe's estimation started (its progress lines)
	bar        *progressbar.ProgressBar // the estimation's progress bar on a terminal
	tenths     int                      // the tenths of the estimation's prompts reported
}

func (b *biasFlags) register(fs *cli.FlagSet) {
	cli.String(fs, &b.debias, "debias", "", "bias `method`: pride (direct: PriDe, a letter prior estimated without labels from a 5% sample under all cyclic permutations, then one decode per row; Zheng et al., ICLR 2024), contextual (binary: p_yes calibrated against content-free evidence; Zhao et al., ICML 2021) or none (the raw scores). Default, under the direct contract: PriDe with the prior stored for this model and option count (earlier runs keep theirs under ~/.cache/gojev/priors), else one estimated from this input when its sample is at most half its rows, else the raw scores for those rows. The raw scores stay in every record")
	cli.String(fs, &b.permute, "permute", "", "`cyclic` or N: decide every row under all k cyclic permutations of its options (cyclic), or N evenly spaced ones, and average each option's log-probability (k or N decodes a row, sharing their prefix); with --debias pride, N > 1 divides the prior out of each permutation before averaging")
	cli.String(fs, &b.priorFile, "prior", "", "PriDe's prior `file` (JSON): read it when it exists (no estimation), else estimate the prior and save it there, to reuse for this model and contract")
	cli.Bool(fs, &b.priorOnly, "prior-only", "with --debias pride --prior FILE: estimate the prior from the input's sample, save it to FILE and stop, deciding nothing (the first step of a sharded run: every --shard then reads FILE); when FILE exists, only check it")
	cli.Float(fs, &b.sampleFrac, "pride-sample", debias.DefaultSampleFraction, fmt.Sprintf("the `fraction` of rows (per option count; at least %d) PriDe estimates its prior from", debias.DefaultMinSampleRows))
	b.sampleMinRn = debias.DefaultMinSampleRows
	scoreReadingFlag(fs, &b.reading)
}

// scoreReadingFlag registers --score-reading, shared by jev decide and jev serve.
func scoreReadingFlag(fs *cli.FlagSet, v *string) {
	cli.String(fs, v, "score-reading", string(gojev.ReadBothOrders), fmt.Sprintf("how a score question's rubric is read: %s (its levels listed and reversed, the two reads' log-probabilities averaged: two prompts sharing their prefix, and the position bias that is not symmetric cancels) or %s (once, as listed, under --debias as a choice)", gojev.ReadBothOrders, gojev.ReadListed))
}

// scoreReading checks --score-reading's value.
func scoreReading(v string) (gojev.ScoreReading, error) {
	switch r := gojev.ScoreReading(v); r {
	case gojev.ReadBothOrders, gojev.ReadListed:
		return r, nil
	}
	return "", cli.Usage(fmt.Errorf("--score-reading %q: want %s or %s", v, gojev.ReadBothOrders, gojev.ReadListed))
}

// method resolves the flags for a contract.
func (b *biasFlags) method(c gojev.Contract) (debias.Method, error) {
	if b.permute != "" && b.permute != "cyclic" {
		n, err := strconv.Atoi(b.permute)
		if err != nil || n < 1 || n > len(contract.Letters) {
			return "", cli.Usage(fmt.Errorf("--permute %q: want cyclic (all k permutations) or a number of permutations, 1 to %d", b.permute, len(contract.Letters)))
		}
		b.permuteN = n
	}
	if b.permute == "cyclic" && b.debias != "" {
		return "", cli.Usage(errors.New("--permute cyclic and --debias are alternatives: choose one (the letter prior cancels in the mean over all k permutations; --debias pride --permute N combines PriDe with N < k of them)"))
	}
	if b.permuteN > 0 && b.debias != "" && b.debias != "pride" {
		return "", cli.Usage(fmt.Errorf("--permute %d combines only with --debias pride", b.permuteN))
	}
	if !(b.sampleFrac > 0 && b.sampleFrac <= 1) {
		return "", cli.Usage(fmt.Errorf("--pride-sample %v: want a fraction in (0, 1]", b.sampleFrac))
	}
	m := debias.Default
	switch {
	case b.debias == "pride":
		m = debias.PriDe
	case b.debias == "contextual":
		m = debias.Contextual
	case b.debias == "none":
		m = debias.None
		if b.permute != "" {
			return "", cli.Usage(errors.New("--debias none decides from one prompt a row: drop --permute"))
		}
	case b.debias != "":
		return "", cli.Usage(fmt.Errorf("--debias %q: want pride (direct contract), contextual (binary contract) or none", b.debias))
	case b.permute != "":
		m = debias.Cyclic
	}
	if (m == debias.PriDe || m == debias.Cyclic) && c == gojev.Binary {
		return "", cli.Usage(fmt.Errorf("--debias pride and --permute control the letter bias of the direct contract; the binary contract has --debias contextual"))
	}
	if m == debias.Contextual && c != gojev.Binary {
		return "", cli.Usage(errors.New("--debias contextual calibrates the binary contract's yes/no readout (--contract binary); the direct contract has --debias pride"))
	}
	if b.priorFile != "" && m != debias.PriDe && (m != debias.Default || c == gojev.Binary) {
		return "", cli.Usage(errors.New("--prior FILE holds PriDe's prior: use it with --debias pride (or the direct contract's default)"))
	}
	return m, nil
}

// checkShard checks the bias-control flags against --shard and --prior-only. PriDe's prior
// must be the same for every shard, so a sharded PriDe run reads it from an existing --prior
// FILE, estimated once beforehand (--prior-only); it never estimates one of its own.
func (b *biasFlags) checkShard(m debias.Method, part batch.Shard, out string, resume bool) error {
	if b.priorOnly {
		switch {
		case (m != debias.PriDe && m != debias.Default) || b.priorFile == "":
			return cli.Usage(errors.New("--prior-only estimates PriDe's prior into a file: give --debias pride --prior FILE"))
		case !part.All():
			return cli.Usage(errors.New("--prior-only estimates the prior every shard shares, from the whole input: drop --shard"))
		case out != "" || resume:
			return cli.Usage(errors.New("--prior-only decides nothing: drop -o and --resume"))
		}
		return nil
	}
	if part.All() || (m != debias.PriDe && (m != debias.Default || b.priorFile == "")) {
		return nil // under the default, a shard without --prior reads the stored prior, or decides raw
	}
	file := b.priorFile
	if file == "" {
		file = "FILE"
	}
	how := "estimate it once from the whole input with\n  jev decide --debias pride --prior " + file + " --prior-only -i ROWS\nthen give every shard --prior " + file
	if b.priorFile == "" {
		return cli.Usage(errors.New("--shard with --debias pride needs the prior every shard shares, in --prior FILE (a shard must not estimate a prior of its own): " + how))
	}
	if _, err := os.Stat(b.priorFile); err != nil {
		return cli.Usage(fmt.Errorf("--shard with --debias pride reads the shared prior from --prior %s, which is missing (%w): %s", b.priorFile, err, how))
	}
	return nil
}

// report says on w what batch.Job did to find PriDe's prior (profile: the --calibration file).
func (b *biasFlags) report(w io.Writer, ev batch.PriorEvent, profile string) {
	switch ev.Step {
	case batch.PriorFromFile, batch.PriorFromProfile:
		from := b.priorFile
		switch {
		case ev.Err != nil:
			fmt.Fprintf(w, "jev decide: warning: PriDe: the stored prior cannot be read (%v); estimating it again\n", ev.Err)
			return
		case ev.Step == batch.PriorFromProfile:
			from = "the calibration profile " + profile
		case ev.Stored:
			from = "the stored priors (" + ev.File + ", and gojev's shipped ones)"
		}
		fmt.Fprintf(w, "jev decide: PriDe: prior read from %s: %s\n", from, ev.Prior)
	case batch.PriorEstimating:
		b.estimating, b.tenths = time.Now(), 0
		fmt.Fprintf(w, "jev decide: PriDe: estimating the letter prior from %d rows under all their cyclic permutations (%d prompts)...\n", ev.SampleRows, ev.Prompts)
		if 2*ev.SampleRows > ev.Rows {
			fmt.Fprintf(w, "jev decide: PriDe: the sample is %d of the %d rows (at least %d are sampled), so this run costs nearly --permute cyclic; on a large file it costs about 1 + %.2f(k-1) times the raw run, and --prior FILE saves the prior for later runs\n",
				ev.SampleRows, ev.Rows, b.sampleMinRn, b.sampleFrac)
		}
		if isTerminal(w) {
			b.bar = newBar(w, int64(ev.Prompts), "estimating the prior", "prompts")
			b.bar.StartWithoutRender() // its times and rate count from now, not from the first row done
			_ = b.bar.RenderBlank()
		}
	case batch.PriorEstimated:
		if b.bar != nil {
			_ = b.bar.Finish()
			b.bar = nil
		}
		fmt.Fprintf(w, "jev decide: PriDe: prior estimated in %.1fs: %s\n", ev.Elapsed.Seconds(), ev.Prior)
	case batch.PriorSaved:
		switch {
		case ev.Err != nil:
			fmt.Fprintf(w, "jev decide: warning: PriDe: the prior cannot be stored for later runs: %v\n", ev.Err)
		case ev.Stored:
			fmt.Fprintf(w, "jev decide: PriDe: prior kept in %s: later runs with this model and option count read it (--debias none: the raw scores)\n", ev.File)
		default:
			fmt.Fprintf(w, "jev decide: PriDe: prior saved to %s (reuse it with --prior for this model and contract)\n", b.priorFile)
		}
	case batch.PriorNone:
		ks := make([]string, len(ev.Raw))
		for i, k := range ev.Raw {
			ks[i] = strconv.Itoa(k)
		}
		fmt.Fprintf(w, "jev decide: PriDe: no prior for rows of %s options (too few to estimate one without the cost of --permute cyclic, and none stored): they get the raw scores; a run over 20 or more such rows estimates and stores one\n", strings.Join(ks, ", "))
	}
}

// progress shows PriDe's estimation going on (batch.Job.OnPriorProgress: done of total
// prompts): a progress bar on a terminal, else a line at each tenth, with the time it has
// taken and a linear guess at the time left. The last prompt prints nothing: the
// PriorEstimated line follows.
func (b *biasFlags) progress(w io.Writer, done, total int) {
	if total <= 0 || done >= total {
		return
	}
	if b.bar != nil {
		if b.bar.GetMax64() != int64(total) {
			b.bar.ChangeMax64(int64(total)) // rows of more than 16 options count their sub-rows' prompts
		}
		_ = b.bar.Set64(int64(done))
		return
	}
	if t := 10 * done / total; t > b.tenths {
		b.tenths = t
		took := time.Since(b.estimating)
		left := time.Duration(float64(took) * float64(total-done) / float64(done))
		fmt.Fprintf(w, "jev decide: PriDe: %d of %d prompts decoded in %.0fs, about %.0fs left\n", done, total, took.Seconds(), left.Seconds())
	}
}
