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
	many     string
	grouping string
	seed     uint64
	keep     int
}

func (f *knockoutFlags) register(fs *cli.FlagSet) {
	cli.String(fs, &f.many, "many", "", "how the direct contract decides a row of 17 to 256 options: `scheme` shortlist (every option ranked by the cosine of its hidden state with the state's, the best --shortlist decided under the binary contract; 17 prompts a row, and one short prompt per distinct option text once), binary (binary-candidates-v1: one yes/no prompt per option, ranked by p_yes) or knockout (direct prompts over groups of at most 16, then a final pass among the groups' best; about n/16 + 1 prompts). Default: shortlist, or binary over --runtime URL (a server reads no hidden states); a resumed run keeps the scheme its run file records")
	cli.Int(fs, &f.keep, "shortlist", gojev.DefaultShortlist, "with the shortlist: how many of the ranked options the binary contract decides (`k`, 2 to 16)")
	cli.String(fs, &f.grouping, "knockout-grouping", knockout.Shuffle, "with --many knockout: how a row of 17 to 256 options is split into passes of at most 16: `grouping` shuffle (seeded by --knockout-seed and the row's option ids), file (the row's order) or length (balanced by description length)")
	cli.Func(fs, "knockout-seed", "`seed` of --knockout-grouping shuffle (default 0)", func(v string) error {
		_, err := fmt.Sscanf(v, "%d", &f.seed)
		return err
	})
}

func (f *knockoutFlags) apply(opts *gojev.Options) error {
	if !slices.Contains(knockout.Groupings, f.grouping) {
		return cli.Usage(fmt.Errorf("--knockout-grouping %q: want %s", f.grouping, strings.Join(knockout.Groupings, ", ")))
	}
	if f.many != "" && f.many != gojev.ManyBinary && f.many != gojev.ManyKnockout && f.many != gojev.ManyShortlist {
		return cli.Usage(fmt.Errorf("--many %q: want %s, %s or %s", f.many, gojev.ManyBinary, gojev.ManyKnockout, gojev.ManyShortlist))
	}
	if f.keep < 2 || f.keep > 16 {
		return cli.Usage(fmt.Errorf("--shortlist %d: want 2 to 16", f.keep))
	}
	if f.many != gojev.ManyKnockout && (f.grouping != knockout.Shuffle || f.seed != 0) {
		return cli.Usage(fmt.Errorf("--knockout-grouping and --knockout-seed shape a knockout: add --many knockout"))
	}
	opts.Knockout = gojev.KnockoutOptions{Method: f.many, Grouping: f.grouping, Seed: f.seed}
	if f.many == "" || f.many == gojev.ManyShortlist {
		opts.Knockout.Shortlist = f.keep
	}
	return nil
}
