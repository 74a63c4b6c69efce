package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/atomicfile"
)

// Options are the decision options a run file records: the contract (from PromptVersion),
// bias control, abstention, the injection detector and the knockout grouping. They choose
// the scoring a calibration profile serves the run's records with (Options.ProfileScoring).
func (m *RunFile) Options() gojev.Options {
	opts := gojev.Options{Debias: m.Debias, Permute: m.Permute, AbstainBelow: m.AbstainBelow, Knockout: m.KnockoutOptions()}
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

// Calibrated is what CalibrateFile did: the decisions calibrated, and those marked abstained.
type Calibrated struct {
	Decisions, Abstained int
	// RunFile is the run file written beside the output: the input's, naming the profile and
	// the threshold.
	RunFile *RunFile
}

// CalibrateFile calibrates a results file offline, without decoding: every record of in gets
// what a Decider with Options.Calibration p and Options.AbstainBelow abstainBelow would have
// given it (gojev.Calibrate: the calibrated probability, a "calibration" object, "abstained"
// below the threshold; the choice and the raw fields kept), and error records are copied as
// they are. The records go to out, replaced only once complete, with a run file beside it:
// the input's run file (when it has one) naming the profile (profileFile, p.SHA256) and the
// threshold. The profile must serve the run's scoring (the caller's check, as for
// Options.Calibration); a profile fitted on another model than the input's run file names is
// a SetupError (Field "Calibration", wrapping calibrate.ErrMismatch), and an unreadable run
// file wraps ErrRunFile.
func CalibrateFile(in, out string, p *calibrate.Profile, profileFile string, abstainBelow float64) (*Calibrated, error) {
	meta, err := RunFileOf(in)
	switch {
	case err != nil:
		return nil, err
	case meta == nil:
		meta = &RunFile{Input: in}
	case meta.Model != nil:
		if err := p.Check(*meta.Model, meta.Options().Contract.String()); err != nil {
			return nil, &SetupError{"Calibration", fmt.Errorf("%s: %w", profileFile, err)}
		}
	}
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	res := &Calibrated{RunFile: meta}
	err = Transform(context.Background(), f, &buf, JSONLines(), func(line []byte, _ int) (any, error) {
		if len(line) == 0 {
			return nil, nil
		}
		rec, _, err := Decode(line)
		if err != nil || rec == nil {
			return json.RawMessage(line), nil // an error record, as it was
		}
		gojev.Calibrate(rec.Result, p, abstainBelow)
		res.Decisions++
		if rec.Abstained {
			res.Abstained++
		}
		return *rec, nil
	})
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteBytes(out, buf.Bytes()); err != nil {
		return nil, err
	}
	meta.Calibration = &RunCalibration{File: profileFile, SHA256: p.SHA256}
	meta.AbstainBelow = abstainBelow
	if err := meta.Save(RunFilePath(out)); err != nil {
		return nil, fmt.Errorf("writing the run file: %w", err)
	}
	return res, nil
}
