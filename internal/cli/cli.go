// Package cli is jev's command-line plumbing: flag sets whose flags have several spellings
// ("-m, --model"), listed in the order a command declares them, and the usage errors (exit
// code 2) every command returns for a mistake on its command line.
//
// A FlagSet belongs to one parse of one command: nothing is shared between parses, so
// commands may run on several goroutines at once.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
)

// ErrHelp reports that -h printed a command's usage (exit code 0).
var ErrHelp = errors.New("help requested")

// UsageError marks a command-line mistake (exit code 2); Usage makes one.
type UsageError struct{ err error }

// Usage wraps err as a command-line mistake (nil stays nil).
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err}
}

func (e UsageError) Error() string { return e.err.Error() }

func (e UsageError) Unwrap() error { return e.err }

// FlagSet is a flag.FlagSet that remembers each flag's spellings in registration order, so
// the usage lists "-m, --model" on one line and in the order the command declares them.
type FlagSet struct {
	*flag.FlagSet
	groups [][]string
}

// NewFlagSet makes the flag set of one parse of the command name.
func NewFlagSet(name string) *FlagSet {
	return &FlagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
}

// Help lists a flag defined directly on the embedded flag.FlagSet (fs.Float64Var) in the usage.
func (fs *FlagSet) Help(spec string) { fs.groups = append(fs.groups, names(spec)) }

// names splits a spec "m,model" into its spellings.
func names(spec string) []string { return strings.Split(spec, ",") }

// String defines a string flag under every spelling in spec ("o,output").
func String(fs *FlagSet, p *string, spec, def, usage string) {
	for _, n := range names(spec) {
		fs.StringVar(p, n, def, usage)
	}
	fs.Help(spec)
}

// Int defines an int flag under every spelling in spec.
func Int(fs *FlagSet, p *int, spec string, def int, usage string) {
	for _, n := range names(spec) {
		fs.IntVar(p, n, def, usage)
	}
	fs.Help(spec)
}

// Int64 defines an int64 flag under every spelling in spec.
func Int64(fs *FlagSet, p *int64, spec string, def int64, usage string) {
	for _, n := range names(spec) {
		fs.Int64Var(p, n, def, usage)
	}
	fs.Help(spec)
}

// Duration defines a time.Duration flag ("90s", "2m") under every spelling in spec.
func Duration(fs *FlagSet, p *time.Duration, spec string, def time.Duration, usage string) {
	*p = def
	for _, n := range names(spec) {
		fs.Var((*durationValue)(p), n, usage)
	}
	fs.Help(spec)
}

// durationValue is a time.Duration flag whose parse error says what a duration looks like
// (the flag package's says only "parse error": "--timeout 10" lacks its unit).
type durationValue time.Duration

func (d *durationValue) String() string { return (*time.Duration)(d).String() }

func (d *durationValue) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration with its unit, such as 500ms, 20s, 2m or 1m30s")
	}
	*d = durationValue(v)
	return nil
}

// Float defines a float64 flag under every spelling in spec.
func Float(fs *FlagSet, p *float64, spec string, def float64, usage string) {
	for _, n := range names(spec) {
		fs.Float64Var(p, n, def, usage)
	}
	fs.Help(spec)
}

// Bool defines a bool flag (default false) under every spelling in spec.
func Bool(fs *FlagSet, p *bool, spec, usage string) {
	for _, n := range names(spec) {
		fs.BoolVar(p, n, false, usage)
	}
	fs.Help(spec)
}

// Func defines a flag whose value fn parses (flag.FlagSet.Func) under every spelling in spec.
func Func(fs *FlagSet, spec, usage string, fn func(string) error) {
	for _, n := range names(spec) {
		fs.Func(n, usage, fn)
	}
	fs.Help(spec)
}

// PrintFlags writes the flags in registration order: "  -m, --model path" (spellings of up
// to three letters take one dash), then the usage and any non-zero default.
func PrintFlags(w io.Writer, fs *FlagSet) {
	for _, group := range fs.groups {
		f := fs.Lookup(group[0])
		arg, usage := flag.UnquoteUsage(f)
		if _, ok := f.Value.(*durationValue); ok && arg == "value" {
			arg = "duration"
		}
		var spelled []string
		for _, n := range group {
			if len(n) <= 3 {
				spelled = append(spelled, "-"+n)
			} else {
				spelled = append(spelled, "--"+n)
			}
		}
		line := "  " + strings.Join(spelled, ", ")
		if arg != "" {
			line += " " + arg
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && !strings.Contains(usage, "(default") {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	}
}

// Parse parses args into fs and refuses positional arguments; -h prints synopsis and the
// flags to stderr and returns ErrHelp; a mistake is a UsageError.
func Parse(fs *FlagSet, args []string, stderr io.Writer, synopsis string) error {
	if err := ParseLoose(fs, args, stderr, synopsis); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return Usage(fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	return nil
}

// ParseLoose is Parse leaving positional arguments (fs.Args) to the caller.
func ParseLoose(fs *FlagSet, args []string, stderr io.Writer, synopsis string) error {
	// The flag package prints the usage on every parse error; print it only for -h, and
	// answer a mistake with the mistake and a pointer to -h.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(stderr, "%s\n\nFlags:\n", synopsis)
			PrintFlags(stderr, fs)
			return ErrHelp
		}
		return Usage(fmt.Errorf("%w (jev %s -h lists the flags)", err, fs.Name()))
	}
	return nil
}

// ParseInterleaved parses args with flags and positional arguments in any order
// ("report a.jsonl --html r.html b.jsonl") and returns the positional ones in order.
func ParseInterleaved(fs *FlagSet, args []string, stderr io.Writer, synopsis string) ([]string, error) {
	var pos []string
	for {
		if err := ParseLoose(fs, args, stderr, synopsis); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}
