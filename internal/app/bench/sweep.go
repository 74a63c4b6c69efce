package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/app/report"
	"github.com/gojev/gojev/internal/version"
)

// Scoring is one setting a sweep decides the rows under: its name (a calibration scoring name:
// raw, pride, permute-N, pride+permute-N, cyclic) and a Decider opened with it.
type Scoring struct {
	Name    string
	Decider *gojev.Decider
}

// ScoringPath is what a sweep measured for one scoring over every row.
type ScoringPath struct {
	Scoring  string `json:"scoring"`
	Rows     int    `json:"rows"`
	Errors   int    `json:"errors"`
	Labelled int    `json:"labelled"`
	Correct  int    `json:"correct"`
	// Accuracy is Correct/Labelled, with its 95 % Wilson interval.
	Accuracy   float64         `json:"accuracy"`
	AccuracyCI report.Interval `json:"accuracy_ci95"`
	// WallS is the sum of this scoring's blocks' wall times (seconds); DecodeS the part in
	// the runtime's read-out.
	WallS   float64 `json:"wall_s"`
	DecodeS float64 `json:"decode_s"`
	// PromptTokens is the prompt tokens a no-reuse run would decode (every shifted prompt
	// counted); TokensDecoded what the runtime decoded after the prefixes prompts shared.
	PromptTokens  int64 `json:"prompt_tokens"`
	TokensDecoded int64 `json:"tokens_decoded"`
	// PromptsPerRow is the mean number of prompts a row was decided under (its cyclic shifts,
	// and the injection detector's).
	PromptsPerRow float64 `json:"prompts_per_row"`
	// WallVsBase and DecodedVsBase are WallS and TokensDecoded over the first scoring's.
	WallVsBase    float64 `json:"wall_vs_base"`
	DecodedVsBase float64 `json:"decoded_vs_base"`
}

// Sweep is jev bench --scorings' result: the same rows decided under each scoring, in
// interleaved blocks, in one run.
type Sweep struct {
	Rows     int            `json:"rows"`
	Block    int            `json:"block"`
	Threads  int            `json:"threads"`
	Model    string         `json:"model"`
	Contract string         `json:"contract"`
	Paths    []*ScoringPath `json:"scorings"`
	Started  time.Time      `json:"started"`
}

// RunSweep decides rows under every scoring and measures each. The rows go in blocks of block
// rows (0: all in one block); every block is decided under each scoring in turn (DecideAll, so
// a block's prefixes are shared as in jev decide's window), the first scoring of a block
// rotating from block to block, so that a machine's drift over a long run and the cost of
// switching between Deciders fall on every scoring alike. record, when not nil, receives every
// outcome (scoring index, row index) as it is decided. Ratios are against the first scoring.
func RunSweep(ctx context.Context, scorings []Scoring, rows []contract.Row, block int, record func(s, row int, o gojev.Outcome) error) (*Sweep, error) {
	if len(scorings) == 0 {
		return nil, fmt.Errorf("bench: a sweep needs at least one scoring")
	}
	block = blockSize(block, len(rows))
	sw := &Sweep{Rows: len(rows), Block: block, Started: time.Now().UTC()}
	prompts := make([]int, len(scorings))
	for _, s := range scorings {
		sw.Paths = append(sw.Paths, &ScoringPath{Scoring: s.Name})
	}
	for b, lo := 0, 0; lo < len(rows); b, lo = b+1, lo+block {
		hi := min(lo+block, len(rows))
		for j := range scorings {
			i := (b + j) % len(scorings)
			d, p := scorings[i].Decider, sw.Paths[i]
			before := d.Stats()
			start := time.Now()
			outs, err := d.DecideAll(ctx, rows[lo:hi])
			if err != nil {
				return nil, fmt.Errorf("bench: %s: %w", scorings[i].Name, err)
			}
			p.WallS += time.Since(start).Seconds()
			after := d.Stats()
			p.PromptTokens += after.PromptTokens - before.PromptTokens
			p.TokensDecoded += after.DecodedTokens - before.DecodedTokens
			p.DecodeS += float64(after.DecodeNS-before.DecodeNS) / 1e9
			for r, o := range outs {
				p.Rows++
				if o.Err != nil {
					p.Errors++
				} else {
					prompts[i]++
					if o.Result.Debias != nil {
						prompts[i] += len(o.Result.Debias.Permutations)
					}
					if o.Result.Suspect != nil {
						prompts[i]++ // the injection detector's
					}
					if o.Result.Correct != nil {
						p.Labelled++
						if *o.Result.Correct {
							p.Correct++
						}
					}
				}
				if record != nil {
					if err := record(i, lo+r, o); err != nil {
						return nil, err
					}
				}
			}
		}
	}
	base := sw.Paths[0]
	for i, p := range sw.Paths {
		if decided := p.Rows - p.Errors; decided > 0 {
			p.PromptsPerRow = float64(prompts[i]) / float64(decided)
		}
		if p.Labelled > 0 {
			p.Accuracy = float64(p.Correct) / float64(p.Labelled)
		}
		p.AccuracyCI = report.Wilson(p.Correct, p.Labelled)
		if base.WallS > 0 {
			p.WallVsBase = p.WallS / base.WallS
		}
		if base.TokensDecoded > 0 {
			p.DecodedVsBase = float64(p.TokensDecoded) / float64(base.TokensDecoded)
		}
	}
	return sw, nil
}

// blockSize is the rows a sweep's block holds: block, or every row when block is 0 or more
// than n (at least 1).
func blockSize(block, n int) int {
	if block <= 0 || block > n {
		return max(1, n)
	}
	return block
}

// ErrNotInProcess: a sweep measures the in-process runtime, and Open gave a Decider over
// another (a llama-server).
var ErrNotInProcess = errors.New("bench: the sweep measures the in-process runtime")

// SweepConfig is what RunScorings runs: Rows (at their input Lines) decided under each of
// Scorings (names ParseScoring reads), in blocks of Block rows, one Decider each from Open.
type SweepConfig struct {
	Scorings []string
	Rows     []contract.Row
	Lines    []int
	Block    int
	// PriorFile is PriDe's prior file, which the pride scorings read (checked against the
	// model); they never estimate one, since the sweep times decoding.
	PriorFile string
	// Results, when set, is the folder each scoring's records go to (Recorder), with a run
	// file from RunFile (Input, Args, NThreads) and the scoring's settings.
	Results string
	RunFile batch.RunFile
	// Open opens a Decider in-process with the scoring's bias control in opts.
	Open func(opts gojev.Options) (*gojev.Decider, error)
	// Model is the model file and Threads the threads, for the report; Log gets a progress
	// line.
	Model   string
	Threads int
	Log     io.Writer
}

// RunScorings is jev bench --scorings: it opens a Decider per scoring, reads the pride
// scorings' prior, decides the rows under every scoring (RunSweep) and, with Results, writes
// each scoring's records and run file. Errors: ErrNotInProcess, a batch.SetupError for the
// prior file (missing, unreadable, another model's), or a decision's or a file's.
func RunScorings(ctx context.Context, cfg SweepConfig) (*Sweep, error) {
	type setting struct {
		method  debias.Method
		permute int
		detect  bool
	}
	settings := make([]setting, len(cfg.Scorings))
	for i, n := range cfg.Scorings {
		base, detect := CutDetect(n)
		m, p, err := ParseScoring(base)
		if err != nil {
			return nil, err
		}
		settings[i] = setting{m, p, detect}
	}
	optsOf := func(s setting) gojev.Options {
		return gojev.Options{Debias: s.method, Permute: s.permute, Detect: s.detect, AbstainOnSuspect: s.detect}
	}
	var id debias.ModelID
	var prior *debias.Prior
	deciders := make([]Scoring, len(cfg.Scorings))
	defer func() {
		for _, s := range deciders {
			if s.Decider != nil {
				_ = s.Decider.Close()
			}
		}
	}()
	for i, n := range cfg.Scorings {
		opts := optsOf(settings[i])
		opts.Prior = prior
		d, err := cfg.Open(opts)
		if err != nil {
			return nil, err
		}
		deciders[i] = Scoring{Name: n, Decider: d}
		if i == 0 {
			m := d.Check().Model
			if m == nil {
				return nil, ErrNotInProcess
			}
			if id, err = gojev.ModelIdentity(m.Path, m.Name); err != nil {
				return nil, err
			}
		}
		if settings[i].method == debias.PriDe && prior == nil {
			if prior, err = readPrior(cfg.PriorFile, id); err != nil {
				return nil, err
			}
		}
		if settings[i].method == debias.PriDe {
			d.SetPrior(prior)
		}
	}

	var rec *Recorder
	var record func(s, r int, o gojev.Outcome) error
	if cfg.Results != "" {
		var err error
		if rec, err = NewRecorder(cfg.Results, cfg.Scorings, cfg.Rows, cfg.Lines); err != nil {
			return nil, err
		}
		defer rec.Close()
		record = rec.Record
	}
	fmt.Fprintf(cfg.Log, "bench: %d rows under %s, in blocks of %d rows ...\n", len(cfg.Rows), strings.Join(cfg.Scorings, ", "), blockSize(cfg.Block, len(cfg.Rows)))
	sw, err := RunSweep(ctx, deciders, cfg.Rows, cfg.Block, record)
	if err != nil {
		return nil, err
	}
	sw.Threads, sw.Model, sw.Contract = cfg.Threads, cfg.Model, contract.PromptVersion
	for i, p := range sw.Paths {
		if rec == nil {
			break
		}
		c := deciders[i].Decider.Check()
		meta := cfg.RunFile
		opts := optsOf(settings[i])
		opts.Knockout = deciders[i].Decider.Options().Knockout // the scheme settled for the runtime
		meta.SetOptions(opts)
		meta.Jev, meta.LlamaCpp, meta.Model = version.Jev(), version.LlamaCpp(), &id
		meta.Backend, meta.Decode, meta.Started = c.Backend, c.Decode, sw.Started
		if settings[i].method == debias.PriDe {
			meta.Prior = prior
		}
		if err := rec.Finish(i, p, meta); err != nil {
			return nil, err
		}
	}
	return sw, nil
}

// readPrior reads the pride scorings' prior file, which must exist.
func readPrior(path string, model debias.ModelID) (*debias.Prior, error) {
	prior, err := debias.LoadPrior(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &batch.SetupError{Field: "PriorFile", Err: fmt.Errorf("%s: no such file: jev decide --debias pride --prior %s --prior-only -i ROWS estimates it", path, path)}
	case err != nil:
		return nil, &batch.SetupError{Field: "PriorFile", Err: err}
	}
	if err := prior.Check(model, contract.PromptVersion); err != nil {
		return nil, &batch.SetupError{Field: "PriorFile", Err: fmt.Errorf("%s: %w; estimate a new one (another file name)", path, err)}
	}
	return prior, nil
}

// ParseScorings splits jev bench's --scorings list (ParseScoring's names, comma-separated) and
// checks it against the prior file: the pride scorings need one (the sweep times decoding, not
// the estimate), and a prior needs a pride scoring. Errors are the caller's usage errors.
func ParseScorings(list, priorFile string) ([]string, error) {
	names := strings.Split(list, ",")
	needPrior := false
	for i, n := range names {
		names[i] = strings.TrimSpace(n)
		base, _ := CutDetect(names[i])
		m, _, err := ParseScoring(base)
		if err != nil {
			return nil, fmt.Errorf("--scorings: %w", err)
		}
		needPrior = needPrior || m == debias.PriDe
	}
	switch {
	case needPrior && priorFile == "":
		return nil, errors.New("--scorings with pride needs --prior FILE (jev decide --debias pride --prior FILE --prior-only -i ROWS estimates one): the sweep times decoding, not the estimate")
	case priorFile != "" && !needPrior:
		return nil, errors.New("--prior FILE serves the pride scorings: add one to --scorings, or drop --prior")
	}
	return names, nil
}

// CutDetect splits "+detect" (the injection detector, flagged rows abstaining: Options.Detect
// and AbstainOnSuspect, jev redteam's detect) off a --scorings name: "pride+detect" gives
// "pride", true; "detect" alone is "raw", true.
func CutDetect(name string) (scoring string, detect bool) {
	if name == "detect" {
		return "raw", true
	}
	return strings.CutSuffix(name, "+detect")
}

// ParseScoring turns a scoring name (calibrate's names: raw, pride, cyclic, permute-N,
// pride+permute-N) into the bias control that decides under it. Errors name the scoring.
func ParseScoring(name string) (debias.Method, int, error) {
	rest, pride := strings.CutPrefix(name, "pride+")
	switch {
	case name == "raw":
		return debias.None, 0, nil
	case name == "pride":
		return debias.PriDe, 0, nil
	case name == "cyclic":
		return debias.Cyclic, 0, nil
	case strings.HasPrefix(rest, "permute-"):
		n, err := strconv.Atoi(strings.TrimPrefix(rest, "permute-"))
		if err != nil || n < 2 || n > contract.MaxOptions {
			break
		}
		if pride {
			return debias.PriDe, n, nil
		}
		return debias.Cyclic, n, nil
	}
	return "", 0, fmt.Errorf("unknown scoring %q: want raw, pride, cyclic, permute-N or pride+permute-N (N from 2 to %d)", name, contract.MaxOptions)
}

// Recorder writes a sweep's records, one results file per scoring (dir/<scoring>.jsonl), as
// jev decide writes them, for jev report and jev calibrate.
type Recorder struct {
	files []*os.File
	rows  []contract.Row
	lines []int
}

// NewRecorder creates dir/<name>.jsonl for every scoring name, for the rows at the given input
// line numbers.
func NewRecorder(dir string, names []string, rows []contract.Row, lines []int) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	r := &Recorder{rows: rows, lines: lines}
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n+".jsonl"))
		if err != nil {
			r.Close()
			return nil, err
		}
		r.files = append(r.files, f)
	}
	return r, nil
}

// Record writes scoring s's outcome of row r (RunSweep's record callback).
func (r *Recorder) Record(s, row int, o gojev.Outcome) error {
	_, err := r.files[s].Write(batch.RecordLine(r.lines[row], r.rows[row].IDJSON(), o))
	return err
}

// Finish syncs scoring s's file and writes its run file: meta with the path's counts and wall
// time.
func (r *Recorder) Finish(s int, p *ScoringPath, meta batch.RunFile) error {
	meta.Finished, meta.ElapsedS = true, p.WallS
	meta.Rows, meta.Decided, meta.Errors = p.Rows, p.Rows-p.Errors, p.Errors
	if p.WallS > 0 {
		meta.DecisionsPerS = float64(meta.Decided) / p.WallS
	}
	if err := r.files[s].Sync(); err != nil {
		return err
	}
	return meta.Save(batch.RunFilePath(r.files[s].Name()))
}

// Close closes the files.
func (r *Recorder) Close() {
	for _, f := range r.files {
		_ = f.Close()
	}
}

// WriteText writes the sweep as the table jev bench --scorings prints: each scoring's decodes a
// row, accuracy, wall time and tokens decoded, and their ratios to the first.
func (sw *Sweep) WriteText(w io.Writer) {
	fmt.Fprintf(w, "bench: %s, %d rows under %d scorings, blocks of %d rows interleaved, %d threads, %s (%s)\n\n",
		sw.Contract, sw.Rows, len(sw.Paths), sw.Block, sw.Threads, filepath.Base(sw.Model), sw.Started.Format(time.RFC3339))
	fmt.Fprintf(w, "  %-18s %9s %-16s %8s %9s %10s %9s %9s %9s\n", "scoring", "prompts", "accuracy", "(95% CI)", "wall s", "s/row", "wall ×", "decoded", "tokens ×")
	base := sw.Paths[0].Scoring
	for _, p := range sw.Paths {
		acc := "n/a"
		ci := ""
		if p.Labelled > 0 {
			acc = fmt.Sprintf("%.1f%% (%d/%d)", 100*p.Accuracy, p.Correct, p.Labelled)
			ci = fmt.Sprintf("%.1f–%.1f", 100*p.AccuracyCI.Low, 100*p.AccuracyCI.High)
		}
		fmt.Fprintf(w, "  %-18s %9.2f %-16s %8s %9.1f %10.2f %8.2f× %9d %8.2f×\n", p.Scoring, p.PromptsPerRow, acc, ci, p.WallS,
			p.WallS/float64(max(1, p.Rows)), p.WallVsBase, p.TokensDecoded, p.DecodedVsBase)
	}
	fmt.Fprintf(w, "\n  prompts: decodes a row; wall × and tokens ×: against %s, in this one run\n", base)
}
