package batch

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/internal/atomicfile"
	"github.com/gojev/gojev/internal/jsonl"
)

// ApplyProfile calibrates a results file offline, without decoding: every record of in gets
// what a Decider with Options.Calibration p and Options.AbstainBelow abstainBelow would have
// given it (gojev.Result.ApplyProfile: the calibrated probability, a "calibration" object,
// "abstained" below the threshold; the choice and the raw fields kept), and error records are
// copied as they are. The records go to out, replaced only once complete, with a run file
// beside it: the input's run file (when it has one) naming the profile (profileFile, p.SHA256)
// and the threshold. The Summary counts the decisions and those abstained (Decided, Abstained),
// and compares the calibrated rows with the profile's fitting rows (Shift, also in the run file)
// as Job.Run does.
// The profile must serve the run's scoring (the caller's check, as for Options.Calibration); a
// profile fitted on another model than the input's run file names is a SetupError (Field
// "Calibration", wrapping calibrate.ErrMismatch), and an unreadable run file wraps ErrRunFile.
func ApplyProfile(in, out string, p *calibrate.Profile, profileFile string, abstainBelow float64) (Summary, error) {
	var sum Summary
	meta, err := RunFileOf(in)
	switch {
	case err != nil:
		return sum, err
	case meta == nil:
		meta = &RunFile{Input: in}
	case meta.Model != nil:
		if err := p.Check(*meta.Model, meta.Options().Contract.String()); err != nil {
			return sum, &SetupError{"Calibration", fmt.Errorf("%s: %w", profileFile, err)}
		}
	}
	f, err := os.Open(in)
	if err != nil {
		return sum, err
	}
	defer f.Close()
	var buf bytes.Buffer
	encode := jsonl.Encoder()
	err = jsonl.Transform(context.Background(), f, &buf, func(line []byte, n int) ([]byte, error) {
		if len(line) == 0 {
			return nil, nil
		}
		e, err := decodeEntry(line)
		rec := e.Record
		switch {
		case e.Answers != nil:
			sum.addAnswers(e.Answers)
			return append(line, '\n'), nil // a typed row's answers, as they were
		case err != nil || rec == nil:
			sum.AddError()
			return append(line, '\n'), nil // an error record, as it was
		}
		rec.ApplyProfile(p, abstainBelow)
		w, b, err := encodeRecord(encode, *rec, rec.Line)
		if r, ok := w.(Record); ok {
			sum.Add(r.Result)
		} else {
			sum.AddError()
		}
		return b, err
	})
	if err != nil {
		return sum, err
	}
	if err := atomicfile.WriteBytes(out, buf.Bytes()); err != nil {
		return sum, err
	}
	opts := meta.Options()
	opts.Calibration = p
	sum.Shift = shiftOf(opts, sum.Served)
	meta.Shift = sum.Shift
	meta.Calibration = &RunCalibration{File: profileFile, SHA256: p.SHA256}
	meta.AbstainBelow = abstainBelow
	if err := meta.Save(RunFilePath(out)); err != nil {
		return sum, fmt.Errorf("writing the run file: %w", err)
	}
	return sum, nil
}

// shiftOf compares the label-free statistics of the rows a run calibrated (served) with those
// of its profile's fitting rows (calibrate.Compare), for the scoring the run follows; nil when
// the run has no profile or the profile keeps no fitting statistics for that scoring.
func shiftOf(opts gojev.Options, served calibrate.RowStats) *calibrate.Shift {
	p := opts.Calibration
	if p == nil {
		return nil
	}
	sc, err := p.For(opts.ProfileScoring(p))
	if err != nil || sc.Fitting == nil {
		return nil
	}
	sh := calibrate.Compare(*sc.Fitting, served)
	return &sh
}
