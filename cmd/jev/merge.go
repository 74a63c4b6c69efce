package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/contract"
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
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	var in, out string
	var quiet bool
	stringFlag(fs, &in, "i,input", "", "the rows `file` the shards decided (JSONL; required)")
	stringFlag(fs, &out, "o,output", "", "merged results `file` (JSONL; default stdout), written only when complete; a run file <file>.run.json goes beside it")
	boolFlag(fs, &quiet, "q,quiet", "no summary, no warnings (problems are still reported)")
	parts, err := parseInterleaved(fs, args, stderr, mergeSynopsis)
	if err != nil {
		return err
	}
	if in == "" {
		return usageError{errors.New("-i rows.jsonl: name the input the shards decided (jev merge -h explains)")}
	}
	if len(parts) == 0 {
		return usageError{errors.New("name the shards' results files (e.g. out/part-*.jsonl)")}
	}
	parts, err = expandParts(parts)
	if err != nil {
		return usageError{err}
	}
	for _, p := range append(parts, in) {
		if out != "" && out != "-" && sameFile(p, out) {
			return usageError{fmt.Errorf("-o %s is also an input of the merge (%s): write the merged file elsewhere", out, p)}
		}
	}
	keys, err := inputKeys(in)
	if err != nil {
		return usageError{err}
	}
	m := &merger{keys: keys, at: make([]recordAt, len(keys)), parts: parts}
	for i, p := range parts {
		if err := m.readPart(i, p); err != nil {
			return err
		}
	}
	metas, err := partMetas(parts)
	if err != nil {
		return err
	}
	if m.checkRunFiles(metas) && !quiet {
		fmt.Fprintln(stderr, "jev merge: no part has a run file (<part>.run.json): the parts' models and flags cannot be checked")
	}
	m.checkMissing(metas)
	if len(m.problems) > 0 {
		m.printProblems(stderr, in)
		return errMergeProblems
	}

	sum := summary{cmd: "jev merge"}
	if !quiet {
		sum.warn = stderr
	}
	write := func(w io.Writer) error { return m.write(w, &sum) }
	if out == "" || out == "-" {
		err = write(stdout)
	} else {
		err = writeFile(out, write)
	}
	if err != nil {
		return err
	}
	meta := mergedMeta(metas, args, in, parts, &sum)
	if meta != nil {
		sum.debiased = meta.Debias != ""
		if meta.ElapsedS > 0 {
			sum.elapsed = time.Duration(meta.ElapsedS * float64(time.Second))
		}
		if out != "" && out != "-" {
			if err := meta.Save(batch.RunFilePath(out)); err != nil {
				return fmt.Errorf("writing the run file: %w", err)
			}
		}
	}
	if !quiet {
		fmt.Fprintf(stderr, "jev merge: %s from %s, every input line once", plural(sum.rows, "record"), plural(len(parts), "part"))
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

// expandParts expands the glob patterns among parts that name no file themselves; a pattern
// that matches nothing is an error.
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

// sameFile reports whether two paths name one existing file.
func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
}

// inputKeys returns the rowKey of every line of the rows file, indexed by line number (index
// 0 unused), as jev decide names the rows it decides.
func inputKeys(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-i: %w", err)
	}
	defer f.Close()
	keys := []string{""}
	err = scanLines(f, func(line []byte, lineNo int) {
		row, _ := contract.ParseRow(line)
		keys = append(keys, rowKey(row.ID, lineNo))
	})
	return keys, err
}

// recordAt locates one record: part index (from 1; 0 = none yet), offset and length.
type recordAt struct {
	part       int
	off, n     int64
	partLineNo int
}

// merger collects where each input line's record is, and what does not add up.
type merger struct {
	keys     []string   // by input line
	at       []recordAt // by input line
	parts    []string   // the parts' paths
	problems []mergeProblem
}

// mergeProblem is one thing that keeps the parts from adding up to the input.
type mergeProblem struct {
	kind   string // "missing", "duplicate", "foreign", "cut", "shard"
	line   int    // the input line concerned (0: none)
	detail string
}

// readPart reads the records of part i (path), checking each against the input.
func (m *merger) readPart(i int, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return usageError{err}
	}
	defer f.Close()
	if heldByOther(f) {
		m.problems = append(m.problems, mergeProblem{"busy", 0, fmt.Sprintf("%s is still being written (a jev decide holds it): merge when its shard has ended", path)})
	}
	br := bufio.NewReaderSize(f, 1<<20)
	var off int64
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			if len(bytes.TrimSpace(line)) > 0 {
				m.problems = append(m.problems, mergeProblem{"cut", 0,
					fmt.Sprintf("%s ends with a cut line %d (%d bytes, a killed run): finish that shard with jev decide --resume", path, n, len(line))})
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		rec, ok := parseRecordHead(line)
		switch {
		case !ok || rec.line == 0:
			return usageError{fmt.Errorf("%s line %d is not a jev decide record with a line number (%.60q)", path, n, line)}
		case rec.line < 1 || rec.line >= len(m.keys):
			m.problems = append(m.problems, mergeProblem{"foreign", 0,
				fmt.Sprintf("%s line %d: a record of input line %d, but the input has %d lines", path, n, rec.line, len(m.keys)-1)})
		case rec.key != m.keys[rec.line]:
			m.problems = append(m.problems, mergeProblem{"foreign", rec.line,
				fmt.Sprintf("%s line %d: a record of id %s for input line %d, which has id %s", path, n, keyID(rec.key), rec.line, keyID(m.keys[rec.line]))})
		case m.at[rec.line].part != 0:
			first := m.at[rec.line]
			m.problems = append(m.problems, mergeProblem{"duplicate", rec.line,
				fmt.Sprintf("input line %d (id %s): %s line %d and %s line %d", rec.line, keyID(rec.key), m.parts[first.part-1], first.partLineNo, path, n)})
		default:
			m.at[rec.line] = recordAt{part: i + 1, off: off, n: int64(len(line)), partLineNo: n}
		}
		off += int64(len(line))
	}
}

// checkRunFiles records the parts without a run file when other parts have one (their
// model and flags cannot be checked against the others'), and reports whether no part has one.
func (m *merger) checkRunFiles(metas []*batch.RunFile) (none bool) {
	var without []string
	for i, meta := range metas {
		if meta == nil {
			without = append(without, m.parts[i])
		}
	}
	if len(without) == len(metas) {
		return true
	}
	for _, p := range without {
		m.problems = append(m.problems, mergeProblem{"norun", 0, fmt.Sprintf("%s has no run file (%s), unlike the other parts: it cannot be checked to be decided like them", p, batch.RunFilePath(p))})
	}
	return false
}

// checkMissing records the input lines without a record. When the parts' run files name
// their shards of one N, a shard none of whose lines arrived is named as such, and so is a
// shard whose part lacks rows and whose run file says the run did not finish.
func (m *merger) checkMissing(metas []*batch.RunFile) {
	n := 0
	unfinished := map[int]string{} // shard → its part, when its run file says it did not finish
	for i, meta := range metas {
		if meta != nil && meta.Shard != "" {
			if s, err := batch.ParseShard(meta.Shard, nil); err == nil {
				n = s.N
				if !meta.Finished {
					unfinished[s.I] = m.parts[i]
				}
			}
		}
	}
	var missing []int
	for l := 1; l < len(m.keys); l++ {
		if m.at[l].part == 0 {
			missing = append(missing, l)
		}
	}
	if n > 0 {
		byShard := map[int]int{}
		for _, l := range missing {
			byShard[batch.ShardOf(l, n)]++
		}
		for i := range n {
			s := batch.Shard{I: i, N: n}
			size := s.Size(len(m.keys) - 1)
			switch {
			case size > 0 && byShard[i] == size:
				m.problems = append(m.problems, mergeProblem{"shard", 0,
					fmt.Sprintf("shard %s: none of its %d rows is in the parts: its file is missing (or empty); run jev decide --shard %s", s, size, s)})
				missing = slices.DeleteFunc(missing, func(l int) bool { return batch.ShardOf(l, n) == i })
			case byShard[i] > 0 && unfinished[i] != "":
				m.problems = append(m.problems, mergeProblem{"shard", 0,
					fmt.Sprintf("shard %s: %d of its %d rows are missing, and the run file of %s says its run did not finish (killed?): rerun it with jev decide --shard %s --resume", s, byShard[i], size, unfinished[i], s)})
			}
		}
	}
	for _, l := range missing {
		m.problems = append(m.problems, mergeProblem{"missing", l, fmt.Sprintf("input line %d (id %s)", l, keyID(m.keys[l]))})
	}
}

// printProblems reports what keeps the parts from adding up, a few lines per kind.
func (m *merger) printProblems(w io.Writer, in string) {
	const show = 5
	fmt.Fprintf(w, "jev merge: the %s do not add up to %s (%s):\n", plural(len(m.parts), "part"), in, plural(len(m.keys)-1, "line"))
	for _, kind := range []struct{ kind, title string }{
		{"busy", "part still being written"}, {"shard", "shard incomplete"}, {"missing", "missing row"},
		{"duplicate", "duplicate row"}, {"foreign", "foreign row"}, {"cut", "cut part"}, {"norun", "part without a run file"},
	} {
		var ps []mergeProblem
		for _, p := range m.problems {
			if p.kind == kind.kind {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		fmt.Fprintf(w, "  %s:\n", pluralPhrase(len(ps), kind.title))
		for _, p := range ps[:min(show, len(ps))] {
			fmt.Fprintf(w, "    %s\n", p.detail)
		}
		if len(ps) > show {
			fmt.Fprintf(w, "    ... and %d more\n", len(ps)-show)
		}
	}
}

// pluralPhrase writes "1 missing row", "2 missing rows", "2 parts still being written": the
// first word ending in "row", "part" or "shard" takes the plural.
func pluralPhrase(n int, phrase string) string {
	if n != 1 {
		words := strings.Fields(phrase)
		for i, w := range words {
			if w == "row" || w == "part" || w == "shard" {
				words[i] += "s"
				break
			}
		}
		phrase = strings.Join(words, " ")
	}
	return fmt.Sprintf("%d %s", n, phrase)
}

// write copies each input line's record, in input order, to w, counting them into sum.
func (m *merger) write(w io.Writer, sum *summary) error {
	parts := m.parts
	files := make([]*os.File, len(parts))
	defer func() {
		for _, f := range files {
			if f != nil {
				_ = f.Close()
			}
		}
	}()
	bw := bufio.NewWriterSize(w, 1<<20)
	var buf []byte
	for l := 1; l < len(m.keys); l++ {
		at := m.at[l]
		f := files[at.part-1]
		if f == nil {
			var err error
			if f, err = os.Open(parts[at.part-1]); err != nil {
				return err
			}
			files[at.part-1] = f
		}
		buf = slices.Grow(buf[:0], int(at.n))[:at.n]
		if _, err := f.ReadAt(buf, at.off); err != nil {
			return fmt.Errorf("reading %s: %w", parts[at.part-1], err)
		}
		var rec struct {
			gojev.Result
			Error string `json:"error"`
		}
		if err := json.Unmarshal(buf, &rec); err != nil {
			return fmt.Errorf("%s line %d: %w", parts[at.part-1], at.partLineNo, err)
		}
		if rec.Error != "" {
			sum.add(nil)
		} else {
			sum.add(resultDecided(&rec.Result))
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// partMetas reads the parts' run files (nil where a part has none) and checks that they agree
// on what decides: the model, the contract, the bias control and PriDe's prior.
func partMetas(parts []string) ([]*batch.RunFile, error) {
	metas := make([]*batch.RunFile, len(parts))
	var first *batch.RunFile
	var firstPath string
	for i, p := range parts {
		meta, err := batch.ReadRunFile(batch.RunFilePath(p))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, usageError{err}
		}
		metas[i] = meta
		if first == nil {
			first, firstPath = meta, p
			continue
		}
		if what := first.Disagrees(meta); what != "" {
			return nil, fmt.Errorf("%s and %s were decided with different %s: they are parts of different runs", firstPath, p, what)
		}
	}
	return metas, nil
}

// mergedMeta is the run file of the merged output: what the parts' run files agree on, the
// merged counts, and the wall time from the first part's start to the last part's end; nil
// when no part has a run file.
func mergedMeta(metas []*batch.RunFile, args []string, in string, parts []string, sum *summary) *batch.RunFile {
	var out *batch.RunFile
	var end time.Time
	finished := true
	for _, m := range metas {
		if m == nil {
			finished = false
			continue
		}
		if out == nil {
			c := *m
			out = &c
		}
		if m.Started.Before(out.Started) {
			out.Started = m.Started
		}
		if e := m.Started.Add(time.Duration(m.ElapsedS * float64(time.Second))); e.After(end) {
			end = e
		}
		finished = finished && m.Finished
	}
	if out == nil {
		return nil
	}
	out.Args, out.Input, out.Shard, out.Parts = append([]string{"merge"}, args...), in, "", parts
	out.Finished = finished
	out.ElapsedS = end.Sub(out.Started).Seconds()
	out.Rows, out.Decided, out.Errors, out.Skipped = sum.rows, sum.decided, sum.errors, 0
	out.DecisionsPerS = 0
	if out.ElapsedS > 0 {
		out.DecisionsPerS = float64(sum.decided) / out.ElapsedS
	}
	return out
}
