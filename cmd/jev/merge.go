package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/cli"
	"github.com/gojev/gojev/internal/jsonl"
)

const mergeSynopsis = `Usage: jev merge -i rows.jsonl [-o merged.jsonl] PART.jsonl ...

Joins the results files of a sharded run (jev decide --shard I/N -o out/part-{shard}.jsonl)
into one file in input order, as a single jev decide run would have written it, with a run
file beside it (merged.jsonl.run.json) for jev report. A PART may be a glob (out/part-*.jsonl),
for schedulers that run jev without a shell.

Every record names its input line and its row's id. merge checks, against -i, that every input
line has exactly one record, and reports
  missing rows    input lines no part holds (naming a shard none of whose rows arrived),
  duplicate rows  input lines two records hold (a part given twice, two shards on one file),
  foreign rows    records whose line is not in the input, or whose id is not that line's id
                  (a part of another input),
and parts whose run files disagree on the model, contract, bias control or PriDe prior. Any
of these exits 1 and writes no output: rerun the shards concerned (jev decide --resume fills in
a killed shard's file), then merge again. Otherwise it prints the summary a single run prints.

  jev merge -i rows.jsonl out/part-*.jsonl -o merged.jsonl && jev report merged.jsonl`

// errMergeProblems: merge found missing, duplicate or foreign rows (exit code 1, no output).
var errMergeProblems = errors.New("the parts do not add up to the input: nothing written")

func runMerge(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := cli.NewFlagSet("merge")
	var in, out string
	var quiet bool
	cli.String(fs, &in, "i,input", "", "the rows `file` the shards decided (JSONL; required)")
	cli.String(fs, &out, "o,output", "", "merged results `file` (JSONL; default stdout), written only when complete; a run file <file>.run.json goes beside it")
	cli.Bool(fs, &quiet, "q,quiet", "no summary, no warnings (problems are still reported)")
	parts, err := cli.ParseInterleaved(fs, args, stderr, mergeSynopsis)
	if err != nil {
		return err
	}
	if in == "" {
		return cli.Usage(errors.New("-i rows.jsonl: name the input the shards decided (jev merge -h explains)"))
	}
	if len(parts) == 0 {
		return cli.Usage(errors.New("name the shards' results files (e.g. out/part-*.jsonl)"))
	}
	parts, err = expandParts(parts)
	if err != nil {
		return cli.Usage(err)
	}
	if _, err := os.Stat(in); err != nil {
		return cli.Usage(fmt.Errorf("-i: %w", err))
	}
	var res *batch.Merged
	var problems []batch.Problem
	if out == "" || out == "-" {
		res, problems, err = batch.Merge(in, parts, stdout) // it writes nothing until every check has passed
	} else {
		res, problems, err = batch.MergeFile(in, parts, out, append([]string{"merge"}, args...))
	}
	if res != nil && res.NoRunFiles && !quiet {
		fmt.Fprintln(stderr, "jev merge: no part has a run file (<part>.run.json): the parts' models and flags cannot be checked")
	}
	if len(problems) > 0 {
		printProblems(stderr, in, parts, problems)
		return errMergeProblems
	}
	if errors.Is(err, batch.ErrNotRecord) || errors.Is(err, os.ErrNotExist) {
		return cli.Usage(err)
	}
	if err != nil {
		return setupUsage(err)
	}
	sum := summary{Summary: res.Summary, cmd: "jev merge"}
	meta := res.RunFile
	if !quiet {
		fmt.Fprintf(stderr, "jev merge: %s from %s, every input line once", plural(sum.Rows, "record"), plural(len(parts), "part"))
		if out != "" && out != "-" {
			fmt.Fprintf(stderr, ", written to %s", out)
		}
		fmt.Fprintln(stderr)
		if meta != nil && meta.ElapsedS > 0 {
			fmt.Fprint(stderr, "(the rate below is over the wall time from the first part's start to the last part's end, from their run files)\n")
		}
		sum.print(stderr)
	}
	return nil
}

// problemKinds are the kinds of batch.Problem, in the order a report lists them, with their
// titles for one problem and for several.
var problemKinds = []struct{ Kind, Title, Plural string }{
	{"busy", "part still being written", "parts still being written"},
	{"shard", "shard incomplete", "shards incomplete"},
	{"missing", "missing row", "missing rows"},
	{"duplicate", "duplicate row", "duplicate rows"},
	{"foreign", "foreign row", "foreign rows"},
	{"cut", "cut part", "cut parts"},
	{"norun", "part without a run file", "parts without a run file"},
}

// expandParts expands the glob patterns among parts that name no file themselves (for a
// scheduler that runs a merge without a shell); a pattern that matches nothing is an error.
// Run files and temporary files the pattern matches are left out.
func expandParts(parts []string) ([]string, error) {
	var out []string
	for _, p := range parts {
		if _, err := os.Stat(p); err == nil || !strings.ContainsAny(p, "*?[") {
			out = append(out, p)
			continue
		}
		matches, err := filepath.Glob(p)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", p, err)
		}
		if len(matches) == 0 {
			return nil, fmt.Errorf("%q matches no file", p)
		}
		for _, mp := range matches {
			if !strings.HasSuffix(mp, ".run.json") && !strings.HasSuffix(mp, ".tmp") {
				out = append(out, mp)
			}
		}
	}
	return out, nil
}

// printProblems reports what keeps the parts from adding up, a few lines per kind.
func printProblems(w io.Writer, in string, parts []string, problems []batch.Problem) {
	const show = 5
	lines, _ := jsonl.CountFileLines(in)
	verb := map[bool]string{true: "does", false: "do"}[len(parts) == 1]
	fmt.Fprintf(w, "jev merge: the %s %s not add up to %s (%s):\n", plural(len(parts), "part"), verb, in, plural(lines, "line"))
	for _, kind := range problemKinds {
		var ps []batch.Problem
		for _, p := range problems {
			if p.Kind == kind.Kind {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		title := kind.Title
		if len(ps) != 1 {
			title = kind.Plural
		}
		fmt.Fprintf(w, "  %d %s:\n", len(ps), title)
		for _, p := range ps[:min(show, len(ps))] {
			fmt.Fprintf(w, "    %s\n", p.Detail)
		}
		if len(ps) > show {
			fmt.Fprintf(w, "    ... and %d more\n", len(ps)-show)
		}
	}
}
