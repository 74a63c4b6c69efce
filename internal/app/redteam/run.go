package redteam

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/digest"
)

// ErrSetting: a setting spec that does not parse.
var ErrSetting = errors.New("redteam: bad setting")

// Setting is one decoded setting: tokens joined by "+" (ParseSetting), the Options they decode
// under, the contract token (Base: "", "guarded", "spotlight" or "binary") and the bias-control token (Bias).
type Setting struct {
	Name    string
	Options gojev.Options
	Base    string
	Bias    string
}

// ParseSetting reads a setting such as "guarded+pride+detect": a contract (direct, the
// default; guarded; spotlight; binary), bias control (pride, permute-N, cyclic; pride with permute-N
// divides the prior out of each shift) and detect (the injection detector, flagged rows
// abstain). Errors wrap ErrSetting.
func ParseSetting(spec string) (Setting, error) {
	s := Setting{Name: spec}
	bad := func(why string) (Setting, error) {
		return s, fmt.Errorf("%w %q: %s (tokens: direct, guarded, spotlight, binary; pride, permute-N, cyclic; detect)", ErrSetting, spec, why)
	}
	pride, permute := false, 0
	for _, tok := range strings.Split(spec, "+") {
		switch {
		case tok == "direct" || tok == "raw":
		case tok == "guarded" || tok == "spotlight" || tok == "binary":
			if s.Base != "" {
				return bad("two contracts")
			}
			s.Base = tok
		case tok == "pride":
			pride = true
		case tok == "cyclic":
			permute = -1
		case strings.HasPrefix(tok, "permute-"):
			n, err := strconv.Atoi(strings.TrimPrefix(tok, "permute-"))
			if err != nil || n < 2 || n > contract.MaxOptions {
				return bad(fmt.Sprintf("%q: want permute-N, N from 2 to %d", tok, contract.MaxOptions))
			}
			permute = n
		case tok == "detect":
			s.Options.Detect, s.Options.AbstainOnSuspect = true, true
		default:
			return bad(fmt.Sprintf("unknown token %q", tok))
		}
	}
	switch s.Base {
	case "guarded":
		s.Options.Contract = gojev.Guarded
	case "spotlight":
		s.Options.Contract = gojev.Spotlight
	case "binary":
		s.Options.Contract = gojev.Binary
		if pride || permute != 0 {
			return bad("bias control is the direct contract's")
		}
	}
	switch {
	case permute == -1 && pride:
		return bad("cyclic and pride: the prior cancels in the full cyclic mean")
	case permute == -1:
		s.Options.Debias, s.Bias = debias.Cyclic, "cyclic"
	case pride && permute > 0:
		s.Options.Debias, s.Options.Permute, s.Bias = debias.PriDe, permute, fmt.Sprintf("pride+permute-%d", permute)
	case pride:
		s.Options.Debias, s.Bias = debias.PriDe, "pride"
	case permute > 0:
		s.Options.Debias, s.Options.Permute, s.Bias = debias.Cyclic, permute, fmt.Sprintf("permute-%d", permute)
	default:
		s.Options.Debias = debias.None // raw: the seed's scoring, not the default's
	}
	return s, nil
}

// NameOf joins a setting's tokens in the canonical order ("raw" for none).
func NameOf(base, bias string, detect bool) string {
	var parts []string
	if base != "" {
		parts = append(parts, base)
	}
	if bias != "" {
		parts = append(parts, bias)
	}
	if detect {
		parts = append(parts, "detect")
	}
	if len(parts) == 0 {
		return "raw"
	}
	return strings.Join(parts, "+")
}

// Dir is the folder of a setting's records.
func Dir(dir, setting string) string {
	return filepath.Join(dir, strings.ReplaceAll(setting, "+", "_"))
}

// Reading is a reported setting and how it reads a decoded setting's records: its raw choice
// (Strip: without bias control), the plain mean of the same shifts (Unprior: pride+permute-N
// read as permute-N), without the detector (NoDetect), with a calibration profile
// (Calibrated). Decoding once serves them all.
type Reading struct {
	Name, From                           string
	Strip, Unprior, NoDetect, Calibrated bool
}

// Readings lists the settings a report gives for the decoded ones, each decoded setting first
// and then what its records also answer; with calibrated, each again with the profile applied
// ("+cal"). The map names each derived variant's decoded setting.
func Readings(settings []Setting, calibrated bool) ([]Reading, map[string]string) {
	var out []Reading
	derived := map[string]string{}
	seen := map[string]bool{}
	add := func(v Reading) {
		if !seen[v.Name] {
			seen[v.Name] = true
			out = append(out, v)
			if v.Name != v.From {
				derived[v.Name] = v.From
			}
		}
	}
	for _, s := range settings {
		det := s.Options.Detect
		add(Reading{Name: NameOf(s.Base, s.Bias, det), From: s.Name})
		if plain, ok := strings.CutPrefix(s.Bias, "pride+"); ok {
			add(Reading{Name: NameOf(s.Base, plain, det), From: s.Name, Unprior: true})
		}
		if s.Bias != "" {
			add(Reading{Name: NameOf(s.Base, "", det), From: s.Name, Strip: true})
		}
		if det {
			add(Reading{Name: NameOf(s.Base, s.Bias, false), From: s.Name, NoDetect: true})
			if s.Bias != "" {
				add(Reading{Name: NameOf(s.Base, "", false), From: s.Name, Strip: true, NoDetect: true})
			}
		}
	}
	if calibrated {
		for _, v := range slices.Clone(out) {
			c := v
			c.Name, c.Calibrated = v.Name+"+cal", true
			add(c)
		}
	}
	return out, derived
}

// Read is how a Reading reads one decoded record: the detector's flags at detectThreshold
// (from the recorded p_yes), and with a profile its calibrated probability and abstention
// below threshold (flagged rows abstain too). ok is false when the profile holds no map for the
// record's scoring (the variant is then left out of the report).
func (v Reading) Read(res *gojev.Result, detectThreshold float64, prof *calibrate.Profile, threshold float64) (*gojev.Result, bool) {
	r := *res
	if v.Unprior {
		if !unprior(&r) {
			return nil, false
		}
	}
	if v.Strip {
		stripBias(&r) // the raw choice abstains only on the detector's flag
		r.Abstained = r.Suspect != nil && r.Suspect.Abstain
	}
	if v.NoDetect {
		r.Suspect, r.Abstained = nil, false
	} else if r.Suspect != nil {
		s := *r.Suspect
		s.Threshold, s.Flagged = detectThreshold, s.PYes >= detectThreshold
		s.Abstain = s.Flagged
		r.Suspect = &s
		r.Abstained = s.Abstain
	}
	if v.Calibrated {
		if prof == nil || prof.PromptVersion != r.PromptVersion {
			return nil, false
		}
		if _, err := prof.For(ScoringOf(&r)); err != nil {
			return nil, false
		}
		r.Calibration = nil
		r.ApplyProfile(prof, threshold)
	}
	return &r, true
}

// ScoringOf names a record's scoring as calibration profiles key it (calibrate.ScoringOf).
func ScoringOf(r *gojev.Result) string {
	method, shifts, sample := debias.None, 0, false
	if r.Debias != nil {
		method, shifts, sample = r.Debias.Method, 1+len(r.Debias.Permutations), r.Debias.PriorSample
	}
	return calibrate.ScoringOf(r.Candidates != nil, method, shifts, len(r.Options)+len(r.Candidates), sample)
}

// stripBias turns a result into its raw choice and probability (the same decodes).
func stripBias(r *gojev.Result) {
	if r.Debias == nil {
		return
	}
	r.Chosen, r.Correct = r.Debias.RawChosen, r.Debias.RawCorrect
	r.Debias, r.Calibration = nil, nil
	for _, o := range r.Options {
		if o.ID == r.Chosen {
			r.Probability, r.ChosenLetter = o.Probability, o.Letter
		}
	}
	for _, c := range r.Candidates {
		if c.ID == r.Chosen {
			r.Probability = c.PYes
		}
	}
}

// unprior reads a pride+permute-N result as permute-N: the plain mean of the same shifts'
// log-probabilities (debias.AverageShifts), without the prior.
func unprior(r *gojev.Result) bool {
	d := r.Debias
	if d == nil || d.Method != debias.PriDe || len(d.Permutations) == 0 || d.PriorSample {
		return d != nil && d.PriorSample // a sample row is its full cyclic mean either way
	}
	lp := make([]float64, len(r.Options))
	for i, o := range r.Options {
		lp[i] = o.Logprob
	}
	perms, shifts := [][]float64{debias.LogSoftmax(lp)}, []int{0}
	for _, p := range d.Permutations {
		perms, shifts = append(perms, p.Logprobs), append(shifts, p.Shift)
	}
	scores, probs, err := debias.AverageShifts(perms, shifts)
	if err != nil {
		return false
	}
	nd := *d
	nd.Method, nd.Prior, nd.Scores, nd.Probabilities = debias.Cyclic, nil, scores, probs
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	r.Debias = &nd
	r.Chosen, r.Probability, r.ChosenLetter = r.Options[best].ID, probs[best], r.Options[best].Letter
	if r.Label != "" {
		ok := r.Chosen == r.Label
		r.Correct = &ok
	}
	return true
}

// DecisionOf is what the figures read of a result.
func DecisionOf(res *gojev.Result) Decision {
	d := Decision{Chosen: res.Chosen, Probability: res.Probability, Abstained: res.Abstained}
	if res.Correct != nil {
		d.Labelled, d.Correct = true, *res.Correct
	}
	if res.Suspect != nil {
		d.Detected, d.Flagged, d.PYes = true, res.Suspect.Flagged, res.Suspect.PYes
	}
	return d
}

// Files are the rows files of a run: "clean", then the families', in catalogue order.
func Files(families []Family) []string {
	out := []string{"clean"}
	for _, f := range families {
		out = append(out, f.Name)
	}
	return out
}

// BuildAttacks writes rowsDir/clean.jsonl (the first limit labelled rows that can be attacked,
// as they are) and rowsDir/<family>.jsonl (their attacked copies, in the same order), and
// returns each family's targets by line of those files and the number of rows.
func BuildAttacks(cat *Catalogue, families []Family, in, rowsDir string, limit int, seed uint64) (map[string]map[int]string, int, error) {
	f, err := os.Open(in)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	if err := os.MkdirAll(rowsDir, 0o755); err != nil {
		return nil, 0, err
	}
	outs := map[string]*bytes.Buffer{"clean": {}}
	targets := map[string]map[int]string{}
	for _, fam := range families {
		outs[fam.Name], targets[fam.Name] = &bytes.Buffer{}, map[int]string{}
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	n := 0
	for inLine := 1; sc.Scan(); inLine++ {
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		if limit > 0 && n >= limit {
			break
		}
		var lines [][]byte
		var as []Attack
		ok := true
		for _, fam := range families {
			out, a, good, err := AttackLine(cat, fam, raw, inLine, seed)
			if err != nil {
				return nil, 0, fmt.Errorf("%s line %d: %w", in, inLine, err)
			}
			if !good {
				ok = false
				break
			}
			lines, as = append(lines, out), append(as, a)
		}
		if !ok {
			continue // no label, or no wrong option
		}
		n++
		outs["clean"].Write(raw)
		outs["clean"].WriteByte('\n')
		for i, fam := range families {
			outs[fam.Name].Write(lines[i])
			outs[fam.Name].WriteByte('\n')
			targets[fam.Name][n] = as[i].Target
		}
	}
	if err := sc.Err(); err != nil {
		return nil, 0, err
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("redteam: %s has no labelled row with two or more options to attack", in)
	}
	for name, b := range outs {
		if err := os.WriteFile(filepath.Join(rowsDir, name+".jsonl"), b.Bytes(), 0o644); err != nil {
			return nil, 0, err
		}
	}
	return targets, n, nil
}

// DecideConfig is what DecideSetting needs besides the setting.
type DecideConfig struct {
	// Open opens a Decider with the setting's options (jev opens it as its flags say).
	Open func(gojev.Options) (*gojev.Decider, error)
	// Window is the rows decided at once; PriorFile the direct contract's PriDe prior (""
	// estimates one on the clean rows); Log gets progress lines.
	Window    int
	PriorFile string
	Log       io.Writer
	// RunFile holds the fields every run file gets (the tool's version, the threads).
	RunFile batch.RunFile
	// priors and model are shared by the settings of one run.
	priors map[gojev.Contract]*debias.Prior
	Model  *debias.ModelID
}

// DecideSetting decides every rows file of a run under one setting into Dir(dir,
// setting)/<file>.jsonl with batch.Run, each with its run file, and keeps the files a run
// file says were finished over the same rows (by sha256): a run continues where the last
// stopped.
func DecideSetting(ctx context.Context, s Setting, files []string, rowsDir, dir string, cfg *DecideConfig) error {
	outDir := Dir(dir, s.Name)
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var todo []string
	for _, f := range files {
		in := filepath.Join(rowsDir, f+".jsonl")
		meta, err := batch.ReadRunFile(batch.RunFilePath(filepath.Join(outDir, f+".jsonl")))
		if err == nil && meta.Finished && meta.Input == in && meta.InputSHA256 != "" {
			if sum, err := digest.File(in); err == nil && sum == meta.InputSHA256 {
				continue
			}
		}
		todo = append(todo, f)
	}
	if len(todo) == 0 {
		fmt.Fprintf(cfg.Log, "jev redteam: %s: every file already decided in %s\n", s.Name, outDir)
		return nil
	}
	d, err := cfg.Open(s.Options)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	defer d.Close()
	if m := d.Check().Model; cfg.Model == nil && m != nil {
		id, err := gojev.ModelIdentity(m.Path, m.Name)
		if err != nil {
			return err
		}
		cfg.Model = &id
	}
	if s.Options.Debias == debias.PriDe {
		p, err := cfg.prior(ctx, d, s, rowsDir, dir)
		if err != nil {
			return err
		}
		d.SetPrior(p)
	}
	for _, f := range todo {
		if err := decideFile(ctx, d, s, filepath.Join(rowsDir, f+".jsonl"), filepath.Join(outDir, f+".jsonl"), cfg); err != nil {
			return err
		}
	}
	return nil
}

// decideFile decides one rows file into out with batch.Job, continuing a run over the same
// rows (by sha256) that was cut short, with the run file Job writes plus the input's sha256.
func decideFile(ctx context.Context, d *gojev.Decider, s Setting, in, out string, cfg *DecideConfig) error {
	sum, err := digest.File(in)
	if err != nil {
		return err
	}
	meta := cfg.RunFile
	meta.Args, meta.InputSHA256 = []string{"redteam", "--settings", s.Name}, sum
	prev, err := batch.ReadRunFile(batch.RunFilePath(out))
	resume := err == nil && prev.InputSHA256 == sum
	fmt.Fprintf(cfg.Log, "jev redteam: %s: deciding %s ...\n", s.Name, in)
	_, err = (&batch.Job{Input: in, Output: out, Resume: resume, Window: cfg.Window, Decider: d, RunFile: meta}).Run(ctx)
	return err
}

// prior is a setting's PriDe prior: PriorFile for the direct contract, else the one estimated
// earlier in this run or saved in dir, else estimated on the clean rows' sample and saved.
func (cfg *DecideConfig) prior(ctx context.Context, d *gojev.Decider, s Setting, rowsDir, dir string) (*debias.Prior, error) {
	c := s.Options.Contract
	if p := cfg.priors[c]; p != nil {
		return p, nil
	}
	file := cfg.PriorFile
	if c != gojev.Direct || file == "" {
		file = filepath.Join(dir, "prior-"+c.String()+".json")
	}
	p, err := debias.LoadPrior(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(cfg.Log, "jev redteam: estimating PriDe's prior for %s on the clean rows ...\n", c)
		job := batch.Job{Input: filepath.Join(rowsDir, "clean.jsonl"), Decider: d, PriorFile: file, PriorOnly: true}
		if _, err := job.Run(ctx); err != nil {
			return nil, err
		}
		p = d.Prior()
		fmt.Fprintf(cfg.Log, "jev redteam: PriDe prior for %s saved to %s\n", c, file)
	case err != nil:
		return nil, err
	default:
		var id debias.ModelID
		if cfg.Model != nil {
			id = *cfg.Model
		}
		if err := p.Check(id, c.String()); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
	}
	if cfg.priors == nil {
		cfg.priors = map[gojev.Contract]*debias.Prior{}
	}
	cfg.priors[c] = p
	return p, nil
}

// ReadResults reads a results file's decisions by their input line (batch.ReadEntries).
func ReadResults(path string) (map[int]*gojev.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	entries, _, err := batch.ReadEntries(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[int]*gojev.Result{}
	for _, e := range entries {
		if e.Record != nil {
			out[e.Record.Line] = e.Record.Result
		}
	}
	return out, nil
}

// Cost is one decoded setting's cost per row, over every file it decided.
type Cost struct {
	Setting           string  `json:"setting"`
	Rows              int     `json:"rows"`
	WallS             float64 `json:"wall_s"`
	WallPerRowS       float64 `json:"wall_per_row_s"`
	DecodedPerRow     float64 `json:"decoded_tokens_per_row"`
	WallVsFirst       float64 `json:"wall_vs_first"`
	DecodedVsFirst    float64 `json:"decoded_vs_first"`
	PromptsPerRow     float64 `json:"prompts_per_row"`
	DetectorPerRowTok float64 `json:"detector_tokens_per_row,omitempty"`
}

// Costs sums each decoded setting's run files and records, with ratios to the first setting.
func Costs(settings []Setting, files []string, dir string) []Cost {
	var out []Cost
	for _, s := range settings {
		c := Cost{Setting: s.Name}
		var decoded, detector float64
		var prompts int
		for _, f := range files {
			path := filepath.Join(Dir(dir, s.Name), f+".jsonl")
			if meta, err := batch.ReadRunFile(batch.RunFilePath(path)); err == nil {
				c.WallS += meta.ElapsedS
			}
			recs, _ := ReadResults(path)
			for _, r := range recs {
				c.Rows++
				decoded += r.Stats.DecodedTokens
				switch {
				case r.Candidates != nil:
					prompts += len(r.Candidates)
				case r.Debias != nil:
					prompts += 1 + len(r.Debias.Permutations)
				default:
					prompts++
				}
				if r.Suspect != nil {
					detector += float64(r.Suspect.NPromptTokens)
					prompts++
				}
			}
		}
		if c.Rows > 0 {
			c.WallPerRowS = c.WallS / float64(c.Rows)
			c.DecodedPerRow = decoded / float64(c.Rows)
			c.PromptsPerRow = float64(prompts) / float64(c.Rows)
			c.DetectorPerRowTok = detector / float64(c.Rows)
		}
		switch {
		case len(out) == 0:
			c.WallVsFirst, c.DecodedVsFirst = 1, 1
		case out[0].WallPerRowS > 0:
			c.WallVsFirst = c.WallPerRowS / out[0].WallPerRowS
			c.DecodedVsFirst = c.DecodedPerRow / out[0].DecodedPerRow
		}
		out = append(out, c)
	}
	return out
}

// Report is a red-team run's figures (DIR/redteam.json).
type Report struct {
	Catalogue string                `json:"catalogue"`
	Input     string                `json:"input"`
	Rows      int                   `json:"rows"`
	Families  []Family              `json:"families"`
	Settings  []string              `json:"settings"`
	Costs     []Cost                `json:"costs"`
	Figures   []Figures             `json:"figures"`
	Model     *debias.ModelID       `json:"model,omitempty"`
	Started   time.Time             `json:"started"`
	Derived   map[string]string     `json:"derived_from"`
	Profile   *batch.RunCalibration `json:"calibration,omitempty"`
	Detector  *DetectInfo           `json:"detector,omitempty"`
}

// DetectInfo names the detector the figures read.
type DetectInfo struct {
	PromptVersion string  `json:"prompt_version"`
	Threshold     float64 `json:"threshold"`
}

// MeasureConfig is how Figure reads the records: the detector's threshold, and a calibration
// profile with its abstention (MaxError through SGR, else AbstainBelow).
type MeasureConfig struct {
	DetectThreshold float64
	Profile         *calibrate.Profile
	MaxError        float64
	Confidence      float64
	AbstainBelow    float64
}

// FiguresOf reads every variant's records of every file and measures each family against the
// clean rows. A variant whose records the profile cannot calibrate is left out.
func FiguresOf(variants []Reading, files []string, dir string, targets map[string]map[int]string, mc MeasureConfig) ([]Figures, error) {
	var out []Figures
	for _, v := range variants {
		// A calibrated variant's threshold is its scoring's (SGR on the profile's points).
		threshold, thresholdSet := mc.AbstainBelow, false
		decisions := map[string]map[int]Decision{}
		usable := true
		for _, f := range files {
			recs, err := ReadResults(filepath.Join(Dir(dir, v.From), f+".jsonl"))
			if err != nil {
				return nil, err
			}
			m := map[int]Decision{}
			for line, r := range recs {
				if v.Calibrated && !thresholdSet && mc.MaxError > 0 && mc.Profile != nil {
					th, err := mc.Profile.Threshold(ScoringOf(r), mc.MaxError, mc.Confidence)
					if err == nil {
						threshold = th.Probability
					} else if !errors.Is(err, calibrate.ErrMismatch) {
						return nil, fmt.Errorf("max error %v: %w", mc.MaxError, err)
					}
					thresholdSet = err == nil
				}
				res, ok := v.Read(r, mc.DetectThreshold, mc.Profile, threshold)
				if !ok {
					usable = false
					break
				}
				m[line] = DecisionOf(res)
			}
			if !usable {
				break
			}
			decisions[f] = m
		}
		if !usable {
			continue
		}
		for _, f := range files[1:] {
			out = append(out, Measure(v.Name, f, decisions["clean"], decisions[f], targets[f]))
		}
	}
	return out, nil
}
