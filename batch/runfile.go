package batch

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/atomicfile"
	"github.com/gojev/gojev/knockout"
)

// RunFile is what a run records beside its results file, in <results>.run.json (RunFilePath):
// the model, contract and flags a report names, the PriDe prior a resumed run reuses, the
// shard, and the run's wall time (decisions/s). jev decide writes it when the run starts and
// again when it ends; a resumed run and Merge compare run files (Disagrees) before they join
// records decided apart.
type RunFile struct {
	// Jev and LlamaCpp are gojev's version and the pinned llama.cpp's ("v0.4.0 (80fb11ac73e6)"),
	// filled in by Job.Run where empty.
	Jev      string   `json:"jev"`
	LlamaCpp string   `json:"llama_cpp"`
	Args     []string `json:"args"`
	Input    string   `json:"input"`
	// InputSHA256 is the input file's sha256, where the run recorded it (jev redteam).
	InputSHA256 string `json:"input_sha256,omitempty"`
	// Shard is "I/N" for a run of jev decide --shard (shard I of N).
	Shard string `json:"shard,omitempty"`
	// Parts are the results files jev merge joined into this one.
	Parts   []string        `json:"parts,omitempty"`
	Model   *debias.ModelID `json:"model,omitempty"`
	Backend string          `json:"backend"`
	// Decode is the in-process decode mode (one-sequence, packed); Devices the devices that
	// decided (the GPU names, or CPU) and Plugins the backend plugins loaded.
	Decode        string        `json:"decode,omitempty"`
	Devices       []string      `json:"devices,omitempty"`
	Plugins       []string      `json:"plugins,omitempty"`
	PromptVersion string        `json:"prompt_version"`
	Debias        debias.Method `json:"debias,omitempty"`
	// Permute is --permute N (0: none, or cyclic over all k).
	Permute int           `json:"permute,omitempty"`
	Prior   *debias.Prior `json:"prior,omitempty"`
	// Calibration names the --calibration profile; AbstainBelow is the threshold in force.
	// Shift compares the rows it calibrated with its fitting rows (calibrate.Compare).
	Calibration  *RunCalibration  `json:"calibration,omitempty"`
	Shift        *calibrate.Shift `json:"shift,omitempty"`
	AbstainBelow float64          `json:"abstain_below,omitempty"`
	// Knockout is the scheme rows of more than 16 options were decided by (--many,
	// --shortlist, --knockout-grouping, --knockout-seed), nil for the binary contract over
	// every option (KnockoutOptions: what run files written before the shortlist was the
	// default hold).
	Knockout *gojev.KnockoutOptions `json:"knockout,omitempty"`
	// Detect is the injection detector's setting (--detect), nil without it.
	Detect   *RunDetect `json:"detect,omitempty"`
	NThreads int        `json:"n_threads"`
	Started  time.Time  `json:"started"`
	Finished bool       `json:"finished"`
	ElapsedS float64    `json:"elapsed_s"`
	Rows     int        `json:"rows"`
	Decided  int        `json:"decided"`
	Errors   int        `json:"errors"`
	Skipped  int        `json:"skipped,omitempty"`
	// DecisionsPerS is Decided / ElapsedS of this invocation (a resumed run counts only
	// what it decided itself).
	DecisionsPerS float64 `json:"decisions_per_s"`
	// Invocations counts the runs that wrote this file: 1, plus one per --resume. DecidedAll
	// and ElapsedAllS add up Decided and ElapsedS over them, so a file decided across several
	// resumed runs still gives its throughput (DecidedAll / ElapsedAllS). A run killed before
	// it finished (kill -9) is not counted, neither its rows nor its time. Zero in run files
	// written before these fields.
	Invocations int     `json:"invocations,omitempty"`
	DecidedAll  int     `json:"decided_all,omitempty"`
	ElapsedAllS float64 `json:"elapsed_all_s,omitempty"`
}

// Throughput is the file's decisions per second over every run that wrote it (DecidedAll /
// ElapsedAllS), or this invocation's (Decided / ElapsedS) for a run file without totals; 0
// when no time was recorded.
func (m *RunFile) Throughput() float64 {
	d, e := m.Decided, m.ElapsedS
	if m.ElapsedAllS > 0 {
		d, e = m.DecidedAll, m.ElapsedAllS
	}
	if e <= 0 {
		return 0
	}
	return float64(d) / e
}

// RunCalibration is the calibration profile a run used: its file, or "shipped" for the
// profile gojev ships for the model (calibrate.ShippedProfile, the default), and its sha256.
type RunCalibration struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// shippedCalibration is RunCalibration.File for the shipped default profile.
const shippedCalibration = "shipped"

// runFileSuffix is what a run file's name adds to its results file's.
const runFileSuffix = ".run.json"

// RunFilePath is the run file beside a results file: <results>.run.json.
func RunFilePath(results string) string { return results + runFileSuffix }

// ErrRunFile: a run file that exists cannot be read (not JSON, not a run file).
var ErrRunFile = errors.New("batch: unreadable run file")

// Save writes m to path atomically (a crash leaves the old run file or the new one).
func (m *RunFile) Save(path string) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// ReadRunFile reads a run file. A missing file is an error wrapping fs.ErrNotExist; one that
// cannot be read as a run file wraps ErrRunFile and names the file.
func ReadRunFile(path string) (*RunFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseRunFile(path, b)
}

// RunFileOf reads the run file beside a results file (RunFilePath): nil and no error when
// there is none; an error wrapping ErrRunFile when it exists and cannot be read.
func RunFileOf(results string) (*RunFile, error) {
	m, err := ReadRunFile(RunFilePath(results))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return m, err
}

// parseRunFile decodes a run file's bytes: one JSON object of RunFile's fields.
func parseRunFile(path string, b []byte) (*RunFile, error) {
	var m RunFile
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrRunFile, path, err)
	}
	return &m, nil
}

// RunDetect is what a run file records of the injection detector (gojev.Options.Detect).
type RunDetect struct {
	PromptVersion string  `json:"prompt_version"`
	Threshold     float64 `json:"threshold"`
	Abstain       bool    `json:"abstain_on_suspect,omitempty"`
}

// Disagrees names what two run files disagree on that must be the same for their records to
// be joined (a resumed run and the run it continues, or the parts of a merge): the model, the
// contract, bias control, the injection detector, knockout grouping, calibration and
// abstention, the PriDe prior, the shard count, the decode mode. "" when nothing.
func (a *RunFile) Disagrees(b *RunFile) string {
	model := func(m *RunFile) string {
		if m.Model == nil {
			return ""
		}
		return m.Model.SHA256 + " " + m.Model.Name
	}
	prior := func(m *RunFile) string {
		b, _ := json.Marshal(m.Prior)
		return string(b)
	}
	cal := func(m *RunFile) string {
		if m.Calibration == nil {
			return ""
		}
		return m.Calibration.SHA256
	}
	many := func(m *RunFile) gojev.KnockoutOptions { return spelledOut(m.KnockoutOptions()) }
	n := func(m *RunFile) int {
		s, _ := ParseShard(m.Shard, nil)
		return s.N
	}
	switch {
	case model(a) != model(b):
		return "models"
	case a.PromptVersion != b.PromptVersion:
		return "contracts (prompt_version)"
	case a.Options().Debias != b.Options().Debias || a.Permute != b.Permute:
		return "bias control (--debias, --permute)"
	case many(a) != many(b):
		return "schemes for rows of more than 16 options (--many, --shortlist, --knockout-grouping, --knockout-seed)"
	case (a.Detect == nil) != (b.Detect == nil) || (a.Detect != nil && *a.Detect != *b.Detect):
		return "injection detection (--detect, --detect-threshold, --abstain-on-suspect)"
	case cal(a) != cal(b) || a.AbstainBelow != b.AbstainBelow:
		return "calibration profiles or abstention thresholds (--calibration, --abstain-below, --max-error)"
	case prior(a) != prior(b):
		return "PriDe priors (give every shard the same --prior FILE)"
	case n(a) != n(b):
		return "shard counts (--shard I/N)"
	case a.Decode != "" && b.Decode != "" && a.Decode != b.Decode:
		return "decode modes (--decode; packed is the default on a GPU)"
	}
	return ""
}

// Options are the decision options a run file records: the contract (from PromptVersion),
// bias control, abstention, the injection detector and the knockout grouping. They choose
// the scoring a calibration profile serves the run's records with (Options.ProfileScoring).
func (m *RunFile) Options() gojev.Options {
	method := m.Debias
	switch method {
	case runDefault:
		method = debias.Default
	case "":
		method = debias.None // a run file written before the default was PriDe's
	}
	opts := gojev.Options{Debias: method, Permute: m.Permute, AbstainBelow: m.AbstainBelow, Knockout: m.KnockoutOptions()}
	for _, c := range []gojev.Contract{gojev.Binary, gojev.Guarded, gojev.Spotlight} {
		if m.PromptVersion == c.String() {
			opts.Contract = c
		}
	}
	if d := m.Detect; d != nil {
		opts.Detect, opts.DetectThreshold, opts.AbstainOnSuspect = true, d.Threshold, d.Abstain
	}
	return opts
}

// SetOptions records the decision options opts in the run file: the contract (PromptVersion),
// bias control, abstention, the injection detector and the knockout grouping (nil at the
// default). Options reads them back.
func (m *RunFile) SetOptions(opts gojev.Options) {
	m.PromptVersion, m.Debias, m.Permute, m.AbstainBelow = opts.Contract.String(), opts.Debias, opts.Permute, opts.AbstainBelow
	if m.Debias == debias.Default {
		m.Debias = runDefault
	}
	m.Detect, m.Knockout = nil, runKnockout(opts.Knockout)
	if opts.Detect {
		m.Detect = &RunDetect{PromptVersion: contract.DetectPromptVersion, Threshold: opts.DetectThreshold, Abstain: opts.AbstainOnSuspect}
	}
}

// runDefault is how a run file spells debias.Default (the zero Method, which it writes as
// "default" so that a run file of the raw scores written before, with none, still reads
// as debias.None).
const runDefault debias.Method = "default"

// spelledOut is k with its defaults written: the binary contract for no method, the shuffle
// grouping, a shortlist's k (none for the other schemes), so that two settings that decide
// alike compare equal.
func spelledOut(k gojev.KnockoutOptions) gojev.KnockoutOptions {
	k.Method, k.Grouping = cmp.Or(k.Method, gojev.ManyBinary), cmp.Or(k.Grouping, knockout.Shuffle)
	if k.Method == gojev.ManyShortlist {
		k.Shortlist = cmp.Or(k.Shortlist, gojev.DefaultShortlist)
	} else {
		k.Shortlist = 0
	}
	return k
}

// KnockoutOptions is the run's setting for rows of more than 16 options, spelled out: a run
// file that records none was decided under the binary contract (ManyBinary).
func (m *RunFile) KnockoutOptions() gojev.KnockoutOptions {
	k := gojev.KnockoutOptions{Method: gojev.ManyBinary, Grouping: knockout.Shuffle}
	if m.Knockout != nil {
		k = *m.Knockout
	}
	return k
}
