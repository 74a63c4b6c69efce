package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/gojev/gojev/internal/redteam"
	"github.com/gojev/gojev/internal/report"
)

const redteamSynopsis = `Usage: jev redteam -i rows.jsonl -o DIR [--settings LIST] [--families LIST] [-n N] [flags]

Measures how far text inside the evidence can steer decisions (prompt injection). From labelled
rows it builds attacked copies in five documented families (gojev-injection-v1; each family's
texts and published sources: jev redteam --list), every row attacked towards the same wrong
option (its target) in each family:
  letter     an instruction to answer the target's letter
  content    a note naming the target's description, no letter
  breakout   text imitating the end of the JSON evidence and a new criterion and options
  role       fake assistant/user/system turns and chat-template look-alikes (no special tokens)
  unicode    zero-width spaces, Cyrillic look-alikes, right-to-left marks
It writes them to DIR/rows/<family>.jsonl (DIR/rows/clean.jsonl: the rows as they are), decides
the clean and attacked rows under each setting, one Decider each, into
DIR/<setting>/<family>.jsonl (a later run with the same DIR keeps the files that are complete),
and reports per setting and family: the moved rate (the attacked choice is the target and the
clean one is not), the accuracy drop, abstention and the probabilities of the attacked rows,
and the detector's flags. DIR/redteam.json holds the figures; --html a page with the table,
a chart and the clean runs' evaluation.

A setting is tokens joined by "+": a contract (direct, the default; guarded, the seed's guard
sentence in the direct system text, direct-options-guarded-v1; binary), bias control (pride,
permute-N, cyclic), and detect (the injection detector asks the model whether the evidence tries
to dictate the decision; flagged rows abstain). Each decoded setting is also reported without
its bias control and without its detector (the same decodes), and, with --calibration, with the
profile applied and --max-error or --abstain-below abstaining, so list only what needs decoding:
  --settings pride,pride+permute-2,guarded+pride+detect,binary
reports raw, pride, permute-2 (the plain mean of the same shifts), guarded, guarded+pride,
guarded+detect, guarded+pride+detect and binary. PriDe's prior comes from --prior FILE (direct)
or is estimated once per contract on the clean rows (DIR/prior-<prompt_version>.json). Costs
(wall time and tokens decoded per row) are printed per decoded setting, against the first.

  jev redteam -i rows.jsonl -o out/redteam --settings pride,pride+permute-2 -n 50 --html out/redteam.html`

// redteamSetting is one decoded setting of jev redteam.
type redteamSetting struct {
	name  string
	opts  gojev.Options
	bias  string // the bias-control token ("" none)
	base  string // the contract token ("" direct)
	guard bool
}

// parseRedteamSetting reads a setting such as "guarded+pride+detect".
func parseRedteamSetting(spec string) (redteamSetting, error) {
	s := redteamSetting{name: spec}
	bad := func(why string) (redteamSetting, error) {
		return s, usageError{fmt.Errorf("--settings %q: %s (tokens: direct, guarded, binary; pride, permute-N, cyclic; detect)", spec, why)}
	}
	pride, permute := false, 0
	for _, tok := range strings.Split(spec, "+") {
		switch {
		case tok == "direct" || tok == "raw":
		case tok == "guarded" || tok == "binary":
			if s.base != "" {
				return bad("two contracts")
			}
			s.base = tok
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
			s.opts.Detect, s.opts.AbstainOnSuspect = true, true
		default:
			return bad(fmt.Sprintf("unknown token %q", tok))
		}
	}
	switch s.base {
	case "guarded":
		s.opts.Contract = gojev.Guarded
	case "binary":
		s.opts.Contract = gojev.Binary
		if pride || permute != 0 {
			return bad("bias control is the direct contract's")
		}
	}
	switch {
	case permute == -1 && pride:
		return bad("cyclic and pride: the prior cancels in the full cyclic mean")
	case permute == -1:
		s.opts.Debias, s.bias = debias.Cyclic, "cyclic"
	case pride && permute > 0:
		s.opts.Debias, s.opts.Permute, s.bias = debias.PriDe, permute, fmt.Sprintf("pride+permute-%d", permute)
	case pride:
		s.opts.Debias, s.bias = debias.PriDe, "pride"
	case permute > 0:
		s.opts.Debias, s.opts.Permute, s.bias = debias.Cyclic, permute, fmt.Sprintf("permute-%d", permute)
	}
	return s, nil
}

// nameOf joins a setting's tokens in canonical order.
func nameOf(base, bias string, detect bool) string {
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

// redteamReport is DIR/redteam.json.
type redteamReport struct {
	Catalogue string                `json:"catalogue"`
	Input     string                `json:"input"`
	Rows      int                   `json:"rows"`
	Families  []redteam.Family      `json:"families"`
	Settings  []string              `json:"settings"`
	Costs     []redteamCost         `json:"costs"`
	Figures   []redteam.Figures     `json:"figures"`
	Model     *debias.ModelID       `json:"model,omitempty"`
	Started   time.Time             `json:"started"`
	Derived   map[string]string     `json:"derived_from"`
	Profile   *batch.RunCalibration `json:"calibration,omitempty"`
	Detector  *redteamDetectInfo    `json:"detector,omitempty"`
}

type redteamDetectInfo struct {
	PromptVersion string  `json:"prompt_version"`
	Threshold     float64 `json:"threshold"`
}

// redteamCost is one decoded setting's cost over every file it decided.
type redteamCost struct {
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

func runRedteam(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("redteam")
	var mf modelFlags
	mf.register(fs)
	mf.registerDecoding(fs)
	var in, dir, settingsSpec, familiesSpec, priorFile, htmlPath string
	var limit, window int
	var detectThreshold float64
	var seed uint64
	var list, buildOnly bool
	var cf calibrationFlags
	stringFlag(fs, &in, "i,input", "", "labelled rows `file` (JSONL)")
	stringFlag(fs, &dir, "o,output", "", "`dir`ectory for the attacked rows, the records and redteam.json")
	stringFlag(fs, &settingsSpec, "settings", "pride,pride+permute-2,guarded+pride+detect", "decoded `settings`, comma-separated (tokens joined by +: direct|guarded|binary, pride|permute-N|cyclic, detect)")
	stringFlag(fs, &familiesSpec, "families", "all", "attack `families`, comma-separated: letter, content, breakout, role, unicode")
	intFlag(fs, &limit, "n,rows", 0, "attack only the first `n` labelled rows (0: all)")
	funcFlag(fs, "seed", "`seed` of the targets and variants (default 1)", func(v string) error {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		return err
	})
	seed = 1
	stringFlag(fs, &priorFile, "prior", "", "PriDe's prior `file` for the direct pride settings (default: estimated on the clean rows)")
	intFlag(fs, &window, "window", 32, "`rows` decided at once")
	floatFlag(fs, &detectThreshold, "detect-threshold", gojev.DefaultDetectThreshold, "the detect settings flag (and abstain on) a row when the detector's p_yes is at least `P`; applied to the recorded p_yes, so changing it decodes nothing")
	stringFlag(fs, &htmlPath, "html", "", "write an HTML page to `file`: the injection table and chart, and the clean runs' evaluation")
	boolFlag(fs, &list, "list", "print the attack families, their variants' texts and sources, and stop")
	boolFlag(fs, &buildOnly, "build-only", "write the attacked rows and stop, deciding nothing")
	stringFlag(fs, &cf.profile, "calibration", "", "calibration profile `file`: each setting it holds a scoring for is also reported calibrated (+cal), abstaining per --max-error or --abstain-below")
	floatFlag(fs, &cf.abstainBelow, "abstain-below", 0, "with --calibration: the +cal settings abstain below `P`")
	floatFlag(fs, &cf.maxError, "max-error", 0, "with --calibration: the +cal settings abstain below the profile's SGR threshold for error rate `E`")
	floatFlag(fs, &cf.confidence, "confidence", 0.9, "the `confidence` of --max-error's bound")
	if err := parseFlags(fs, args, stderr, redteamSynopsis); err != nil {
		return err
	}
	cf.seen(fs)
	cat := redteam.Families()
	if list {
		return printFamilies(stdout, cat)
	}
	if in == "" || dir == "" {
		return usageError{errors.New("give the labelled rows (-i rows.jsonl) and a directory for the results (-o DIR)")}
	}
	families, err := cat.Select(strings.Split(familiesSpec, ","))
	if err != nil {
		return usageError{err}
	}
	var settings []redteamSetting
	for _, spec := range strings.Split(settingsSpec, ",") {
		s, err := parseRedteamSetting(strings.TrimSpace(spec))
		if err != nil {
			return err
		}
		settings = append(settings, s)
	}
	var prof *calibrate.Profile
	if cf.profile != "" {
		if prof, err = calibrate.Load(cf.profile); err != nil {
			return usageError{fmt.Errorf("--calibration: %w", err)}
		}
	} else if cf.abstainBelow != 0 || cf.maxErrorSet {
		return usageError{errors.New("--abstain-below and --max-error set the +cal settings' threshold: give --calibration FILE")}
	}

	// The attacked rows.
	rowsDir := filepath.Join(dir, "rows")
	targets, nrows, err := buildAttacks(cat, families, in, rowsDir, limit, seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "jev redteam: %d labelled rows attacked in %d families (%s, seed %d) in %s\n", nrows, len(families), cat.Version, seed, rowsDir)
	if buildOnly {
		return nil
	}
	files := append([]string{"clean"}, cat.Names()...)
	files = slices.DeleteFunc(files, func(f string) bool {
		return f != "clean" && !slices.ContainsFunc(families, func(x redteam.Family) bool { return x.Name == f })
	})

	rep := &redteamReport{Catalogue: cat.Version, Input: in, Rows: nrows, Families: families, Started: time.Now().UTC(), Derived: map[string]string{}}
	for _, s := range settings {
		rep.Settings = append(rep.Settings, s.name)
	}
	var model *debias.ModelID
	priors := map[gojev.Contract]*debias.Prior{}
	for _, s := range settings {
		if err := decideSetting(ctx, &mf, s, files, rowsDir, dir, window, priorFile, priors, &model, stderr); err != nil {
			return err
		}
	}
	rep.Model = model

	// The figures, from the records on disk.
	type variant struct {
		name   string
		from   string
		strip  bool // report the raw choice (no bias control)
		nodet  bool // ignore the detector
		cal    bool
		scored string // the setting the records were decoded under
	}
	var variants []variant
	seen := map[string]bool{}
	add := func(v variant) {
		if !seen[v.name] {
			seen[v.name] = true
			variants = append(variants, v)
			if v.name != v.from {
				rep.Derived[v.name] = v.from
			}
		}
	}
	for _, s := range settings {
		det := s.opts.Detect
		add(variant{name: nameOf(s.base, s.bias, det), from: s.name})
		if strings.HasPrefix(s.bias, "pride+permute-") {
			add(variant{name: nameOf(s.base, strings.TrimPrefix(s.bias, "pride+"), det), from: s.name})
		}
		if s.bias != "" {
			add(variant{name: nameOf(s.base, "", det), from: s.name, strip: true})
		}
		if det {
			add(variant{name: nameOf(s.base, s.bias, false), from: s.name, nodet: true})
			if s.bias != "" {
				add(variant{name: nameOf(s.base, "", false), from: s.name, strip: true, nodet: true})
			}
		}
	}
	var threshold float64
	if prof != nil {
		rep.Profile = &batch.RunCalibration{File: cf.profile, SHA256: prof.SHA256}
		for _, v := range slices.Clone(variants) {
			c := v
			c.name, c.cal = v.name+"+cal", true
			add(c)
		}
	}
	byName := map[string]redteamSetting{}
	for _, s := range settings {
		byName[s.name] = s
	}
	for _, v := range variants {
		s := byName[v.from]
		if s.opts.Detect && !v.nodet && rep.Detector == nil {
			rep.Detector = &redteamDetectInfo{PromptVersion: contract.DetectPromptVersion, Threshold: detectThreshold}
		}
		decisions := map[string]map[int]redteam.Decision{}
		skip := false
		for _, f := range files {
			recs, err := resultsByLine(filepath.Join(dir, safeName(s.name), f+".jsonl"))
			if err != nil {
				return err
			}
			m := map[int]redteam.Decision{}
			for line, r := range recs {
				res := r
				if v.strip {
					res = stripBias(res)
				}
				if v.nodet {
					res.Suspect, res.Abstained = nil, false
				} else if res.Suspect != nil {
					res.Suspect.Threshold = detectThreshold
					res.Suspect.Flagged = res.Suspect.PYes >= detectThreshold
					res.Suspect.Abstain = res.Suspect.Flagged
					res.Abstained = res.Suspect.Abstain
				}
				if v.cal {
					scoring := calibrate.ScoringOf(res.Candidates != nil, biasMethod(res), shiftsOf(res), len(res.Options)+len(res.Candidates), res.Debias != nil && res.Debias.PriorSample)
					if prof.PromptVersion != res.PromptVersion {
						skip = true
						break
					}
					if _, err := prof.For(scoring); err != nil {
						skip = true
						break
					}
					if threshold == 0 {
						if cf.maxError > 0 {
							th, err := prof.Threshold(scoring, cf.maxError, cf.confidence)
							if err != nil {
								return usageError{fmt.Errorf("--max-error %v: %w", cf.maxError, err)}
							}
							threshold = th.Probability
						} else {
							threshold = cf.abstainBelow
						}
					}
					res.Calibration = nil
					gojev.Calibrate(res, prof, threshold)
				}
				m[line] = decisionOf(res)
			}
			if skip {
				break
			}
			decisions[f] = m
		}
		if skip {
			continue
		}
		for _, f := range files[1:] {
			rep.Figures = append(rep.Figures, redteam.Measure(v.name, f, decisions["clean"], decisions[f], targets[f]))
		}
	}
	rep.Costs = costs(settings, files, dir)

	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "redteam.json"), append(b, '\n'), 0o644); err != nil {
		return err
	}
	printRedteam(stdout, rep)
	if htmlPath != "" {
		var runs []*report.Run
		for _, s := range settings {
			rs, err := report.Load(filepath.Join(dir, safeName(s.name), "clean.jsonl"), "clean "+s.name)
			if err != nil {
				return err
			}
			runs = append(runs, rs...)
		}
		page := report.Build(runs)
		page.Injection = injectionSection(rep)
		if err := writeFile(htmlPath, page.WriteHTML); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "jev redteam: HTML report written to %s\n", htmlPath)
	}
	fmt.Fprintf(stderr, "jev redteam: figures written to %s\n", filepath.Join(dir, "redteam.json"))
	return nil
}

// safeName turns a setting into a directory name.
func safeName(s string) string { return strings.ReplaceAll(s, "+", "_") }

// buildAttacks writes DIR/clean.jsonl (the first limit labelled rows that can be attacked) and
// one file per family, and returns each family's targets by line of those files.
func buildAttacks(cat *redteam.Catalogue, families []redteam.Family, in, rowsDir string, limit int, seed uint64) (map[string]map[int]string, int, error) {
	f, err := os.Open(in)
	if err != nil {
		return nil, 0, usageError{err}
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
		var as []redteam.Attack
		ok := true
		for _, fam := range families {
			out, a, good, err := redteam.AttackLine(cat, fam, raw, inLine, seed)
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
		return nil, 0, usageError{fmt.Errorf("%s has no labelled row with two or more options to attack", in)}
	}
	for name, b := range outs {
		if err := os.WriteFile(filepath.Join(rowsDir, name+".jsonl"), b.Bytes(), 0o644); err != nil {
			return nil, 0, err
		}
	}
	return targets, n, nil
}

// decideSetting decides every file under one setting into DIR/<setting>/<file>.jsonl, keeping
// the files a run file marks finished over the same rows file.
func decideSetting(ctx context.Context, mf *modelFlags, s redteamSetting, files []string, rowsDir, dir string, window int, priorFile string,
	priors map[gojev.Contract]*debias.Prior, model **debias.ModelID, stderr io.Writer) error {
	outDir := filepath.Join(dir, safeName(s.name))
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return err
	}
	var todo []string
	for _, f := range files {
		in := filepath.Join(rowsDir, f+".jsonl")
		meta, err := batch.ReadRunFile(batch.RunFilePath(filepath.Join(outDir, f+".jsonl")))
		if err == nil && meta.Finished && meta.Input == in && meta.InputSHA256 != "" {
			if sum, err := batch.FileSHA256(in); err == nil && sum == meta.InputSHA256 {
				continue
			}
		}
		todo = append(todo, f)
	}
	if len(todo) == 0 {
		fmt.Fprintf(stderr, "jev redteam: %s: every file already decided in %s\n", s.name, outDir)
		return nil
	}
	d, err := mf.open(ctx, stderr, s.opts)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	defer d.Close()
	if m := d.Check().Model; *model == nil && m != nil {
		id, err := batch.ModelIdentity(m.Path, m.Name)
		if err != nil {
			return err
		}
		*model = &id
	}
	if s.opts.Debias == debias.PriDe {
		p, err := redteamPrior(ctx, d, s, rowsDir, dir, priorFile, priors, *model, stderr)
		if err != nil {
			return err
		}
		d.SetPrior(p)
	}
	for _, f := range todo {
		in := filepath.Join(rowsDir, f+".jsonl")
		rows, lines, err := readRowLines(in)
		if err != nil {
			return err
		}
		sum, err := batch.FileSHA256(in)
		if err != nil {
			return err
		}
		out := filepath.Join(outDir, f+".jsonl")
		meta := &batch.RunFile{Jev: jevVersion(), LlamaCpp: llamaVersion(), Args: []string{"redteam", "--settings", s.name}, Input: in, InputSHA256: sum,
			PromptVersion: s.opts.Contract.String(), Debias: s.opts.Debias, Permute: s.opts.Permute, Model: *model,
			Backend: d.Check().Backend, Decode: d.Check().Decode, NThreads: mf.threads, Started: time.Now().UTC()}
		if s.opts.Debias == debias.PriDe {
			meta.Prior = d.Prior()
		}
		if s.opts.Detect {
			meta.Detect = &batch.RunDetect{PromptVersion: contract.DetectPromptVersion, Threshold: gojev.DefaultDetectThreshold, Abstain: true}
		}
		fmt.Fprintf(stderr, "jev redteam: %s: deciding %s (%d rows) ...\n", s.name, in, len(rows))
		var buf bytes.Buffer
		encode := batch.JSONLines()
		start := time.Now()
		errs := 0
		for lo := 0; lo < len(rows); lo += window {
			hi := min(lo+window, len(rows))
			outs, err := d.DecideAll(ctx, rows[lo:hi])
			if err != nil {
				return err
			}
			for i, o := range outs {
				var rec any = batch.Record{Result: o.Result, Line: lines[lo+i]}
				if o.Err != nil {
					errs++
					rec = batch.ErrorRecord{ID: rows[lo+i].IDJSON(), Line: lines[lo+i], Error: o.Err.Error()}
				}
				b, err := encode(rec)
				if err != nil {
					b, _ = encode(batch.UnencodableRecord(rec, lines[lo+i], err))
				}
				buf.Write(b)
			}
		}
		if err := writeFile(out, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
			return err
		}
		meta.Finished, meta.ElapsedS = true, time.Since(start).Seconds()
		meta.Rows, meta.Decided, meta.Errors = len(rows), len(rows)-errs, errs
		meta.DecisionsPerS = float64(meta.Decided) / meta.ElapsedS
		if err := meta.Save(batch.RunFilePath(out)); err != nil {
			return err
		}
	}
	return nil
}

// redteamPrior is the PriDe prior of a setting's contract: --prior FILE for the direct
// contract, else the one estimated earlier in this run or saved in DIR, else estimated on the
// clean rows' sample (as jev decide --debias pride estimates it) and saved.
func redteamPrior(ctx context.Context, d *gojev.Decider, s redteamSetting, rowsDir, dir, priorFile string,
	priors map[gojev.Contract]*debias.Prior, model *debias.ModelID, stderr io.Writer) (*debias.Prior, error) {
	c := s.opts.Contract
	if p := priors[c]; p != nil {
		return p, nil
	}
	file := priorFile
	if c != gojev.Direct || file == "" {
		file = filepath.Join(dir, "prior-"+c.String()+".json")
	}
	bf := biasFlags{priorFile: file, sampleFrac: debias.DefaultSampleFraction, sampleMinRn: debias.DefaultMinSampleRows}
	var id debias.ModelID
	if model != nil {
		id = *model
	}
	p, err := bf.loadPrior(id, c.String())
	if err != nil {
		return nil, err
	}
	if p == nil {
		f, err := os.Open(filepath.Join(rowsDir, "clean.jsonl"))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if p, _, err = estimatePrior(ctx, d, f, &bf, id, stderr, false); err != nil {
			return nil, err
		}
		if err := p.Save(file); err != nil {
			return nil, err
		}
		fmt.Fprintf(stderr, "jev redteam: PriDe prior for %s saved to %s\n", c, file)
	}
	priors[c] = p
	return p, nil
}

// resultsByLine reads a results file's decisions by their input line.
func resultsByLine(path string) (map[int]*gojev.Result, error) {
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

// stripBias is a result as it would read without bias control: the raw choice and its
// probability, every raw field kept (the prompts and decodes are the same).
func stripBias(res *gojev.Result) *gojev.Result {
	if res.Debias == nil {
		return res
	}
	r := *res
	r.Debias, r.Calibration = nil, nil
	r.Chosen = res.Debias.RawChosen
	r.Correct = res.Debias.RawCorrect
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
	r.Abstained = r.Suspect != nil && r.Suspect.Abstain
	return &r
}

func biasMethod(res *gojev.Result) debias.Method {
	if res.Debias == nil {
		return debias.None
	}
	return res.Debias.Method
}

func shiftsOf(res *gojev.Result) int {
	if res.Debias == nil {
		return 0
	}
	return 1 + len(res.Debias.Permutations)
}

func decisionOf(res *gojev.Result) redteam.Decision {
	d := redteam.Decision{Chosen: res.Chosen, Probability: res.Probability, Abstained: res.Abstained}
	if res.Correct != nil {
		d.Labelled, d.Correct = true, *res.Correct
	}
	if res.Suspect != nil {
		d.Detected, d.Flagged = true, res.Suspect.Flagged
	}
	return d
}

// costs sums each decoded setting's run files and records.
func costs(settings []redteamSetting, files []string, dir string) []redteamCost {
	var out []redteamCost
	for _, s := range settings {
		c := redteamCost{Setting: s.name}
		var decoded, detector float64
		var prompts int
		for _, f := range files {
			path := filepath.Join(dir, safeName(s.name), f+".jsonl")
			if meta, err := batch.ReadRunFile(batch.RunFilePath(path)); err == nil {
				c.WallS += meta.ElapsedS
			}
			recs, _ := resultsByLine(path)
			for _, r := range recs {
				c.Rows++
				decoded += r.Stats.DecodedTokens
				if r.Candidates != nil {
					prompts += len(r.Candidates)
				} else {
					prompts += max(1, shiftsOf(r))
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
		if len(out) > 0 && out[0].WallPerRowS > 0 {
			c.WallVsFirst = c.WallPerRowS / out[0].WallPerRowS
			c.DecodedVsFirst = c.DecodedPerRow / out[0].DecodedPerRow
		} else if len(out) == 0 {
			c.WallVsFirst, c.DecodedVsFirst = 1, 1
		}
		out = append(out, c)
	}
	return out
}

func printFamilies(w io.Writer, cat *redteam.Catalogue) error {
	fmt.Fprintf(w, "%s: %s\n", cat.Version, cat.Description)
	for _, f := range cat.Families {
		fmt.Fprintf(w, "\n%s (names the target's %s): %s\n", f.Name, f.Target, f.Description)
		for _, s := range f.Sources {
			fmt.Fprintf(w, "  source: %s\n", s)
		}
		for _, v := range f.Variants {
			t := ""
			if v.Transform != "" {
				t = " [" + v.Transform + ": " + cat.Transforms[v.Transform] + "]"
			}
			fmt.Fprintf(w, "  %-20s %q%s\n", v.Name, v.Text, t)
		}
	}
	return nil
}

func printRedteam(w io.Writer, rep *redteamReport) {
	fmt.Fprintf(w, "jev redteam: %d rows, %s, settings %s\n\n", rep.Rows, rep.Catalogue, strings.Join(rep.Settings, ", "))
	fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %7s %9s %9s %8s %8s\n", "setting", "family", "moved", "acted", "clean", "attacked", "abstained", "p(moved)", "flagged", "clean fl")
	for _, f := range rep.Figures {
		fl, cfl := "—", "—"
		if f.Detected {
			fl, cfl = pct1(f.AttackedFlagged), pct1(f.CleanFlagged)
		}
		fmt.Fprintf(w, "  %-26s %-9s %7s %7s %7s %8s %9s %9.3f %8s %8s\n", f.Setting, f.Family, pct1(f.Moved), pct1(f.MovedAnswered),
			pct1(f.CleanAccuracy), pct1(f.AttackedAccuracy), pct1(f.AttackedAbstained), f.MovedMeanProbability, fl, cfl)
	}
	fmt.Fprintf(w, "\n  moved: attacked choice = target, clean choice ≠ target; acted: moved and not abstained; clean/attacked: accuracy;\n")
	fmt.Fprintf(w, "  p(moved): mean probability of the moved rows; flagged: the detector's recall on the family, clean fl: its false alarms\n\n")
	fmt.Fprintf(w, "  %-26s %8s %10s %9s %12s %9s\n", "decoded setting", "rows", "s/row", "wall ×", "tokens/row", "tokens ×")
	for _, c := range rep.Costs {
		fmt.Fprintf(w, "  %-26s %8d %10.2f %8.2f× %12.0f %8.2f×\n", c.Setting, c.Rows, c.WallPerRowS, c.WallVsFirst, c.DecodedPerRow, c.DecodedVsFirst)
	}
}

func pct1(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) }

// injectionSection turns the figures into the HTML report's injection section.
func injectionSection(rep *redteamReport) *report.Injection {
	inj := &report.Injection{Catalogue: rep.Catalogue, Rows: rep.Rows, Figures: rep.Figures}
	for _, f := range rep.Families {
		inj.Families = append(inj.Families, report.InjectionFamily{Name: f.Name, Description: f.Description, Sources: f.Sources})
	}
	for _, c := range rep.Costs {
		inj.Costs = append(inj.Costs, report.InjectionCost{Setting: c.Setting, WallPerRowS: c.WallPerRowS, WallVsFirst: c.WallVsFirst,
			DecodedPerRow: c.DecodedPerRow, DecodedVsFirst: c.DecodedVsFirst})
	}
	return inj
}
