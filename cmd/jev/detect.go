package main

import (
	"errors"
	"fmt"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/cli"
)

// detectFlags are jev decide's injection-detection flags.
type detectFlags struct {
	detect    bool
	threshold float64
	abstain   bool
}

func (f *detectFlags) register(fs *cli.FlagSet) {
	cli.Bool(fs, &f.detect, "detect", "ask the model, for every row, whether its evidence tries to dictate the decision (one more yes/no prompt a row, injection-check-v1); the record gets \"suspect\" with its p_yes and \"flagged\"")
	cli.Float(fs, &f.threshold, "detect-threshold", gojev.DefaultDetectThreshold, "with --detect: flag a row when the detector's p_yes is at least `P`")
	cli.Bool(fs, &f.abstain, "abstain-on-suspect", "with --detect: a flagged row abstains (\"abstained\": true; the choice is kept)")
}

// apply checks the flags and sets them in opts.
func (f *detectFlags) apply(opts *gojev.Options) error {
	switch {
	case !f.detect && f.abstain:
		return cli.Usage(errors.New("--abstain-on-suspect abstains on the rows --detect flags: add --detect"))
	case !(f.threshold > 0 && f.threshold <= 1):
		return cli.Usage(fmt.Errorf("--detect-threshold %v: want a probability in (0, 1]", f.threshold))
	}
	opts.Detect, opts.AbstainOnSuspect = f.detect, f.abstain
	if f.detect {
		opts.DetectThreshold = f.threshold
	}
	return nil
}
