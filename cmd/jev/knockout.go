package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/knockout"
)

// knockoutFlags are jev decide's flags for rows of more than 16 options.
type knockoutFlags struct {
	grouping string
	seed     uint64
}

func (f *knockoutFlags) register(fs *cli.FlagSet) {
	cli.String(fs, &f.grouping, "knockout-grouping", knockout.Shuffle, "how a row of 17 to 256 options is split into passes of at most 16 (a knockout): `grouping` shuffle (seeded by --knockout-seed and the row's option ids), file (the row's order) or length (balanced by description length)")
	cli.Func(fs, "knockout-seed", "`seed` of --knockout-grouping shuffle (default 0)", func(v string) error {
		_, err := fmt.Sscanf(v, "%d", &f.seed)
		return err
	})
}

func (f *knockoutFlags) apply(opts *gojev.Options) error {
	if !slices.Contains(knockout.Groupings, f.grouping) {
		return cli.Usage(fmt.Errorf("--knockout-grouping %q: want %s", f.grouping, strings.Join(knockout.Groupings, ", ")))
	}
	opts.Knockout = gojev.KnockoutOptions{Grouping: f.grouping, Seed: f.seed}
	return nil
}
