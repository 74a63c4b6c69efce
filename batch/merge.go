package batch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/atomicfile"
	"github.com/gojev/gojev/internal/jsonl"
)

// Merge joins the results files of one input's shards (parts) into one file in input order,
// as a single run would have written it, after checking them against the input rows file:
// every input line must have exactly one record (each record names its line and its row's
// id), no part may be cut short or still being written, and the parts' run files must agree
// on what decided them (RunFile.Disagrees). When something does not add up, it writes nothing
// and returns the Problems; otherwise it writes every record to out and returns what they add
// up to. The error is for a file that cannot be read, a line of a part that is not a record,
// parts whose run files disagree, and writing out.
func Merge(input string, parts []string, out io.Writer) (*Merged, []Problem, error) {
	keys, err := inputKeys(input)
	if err != nil {
		return nil, nil, err
	}
	m := &merger{keys: keys, at: make([]recordAt, len(keys)), parts: parts}
	for i, p := range parts {
		if err := m.readPart(i, p); err != nil {
			return nil, nil, err
		}
	}
	metas, err := partRunFiles(parts)
	if err != nil {
		return nil, nil, err
	}
	res := &Merged{NoRunFiles: m.checkRunFiles(metas)}
	m.checkMissing(metas)
	if len(m.problems) > 0 {
		return res, m.problems, nil
	}
	if err := m.write(out, &res.Summary); err != nil {
		return nil, nil, err
	}
	res.RunFile = mergedRunFile(metas, input, parts, &res.Summary)
	if res.RunFile != nil && res.RunFile.ElapsedS > 0 {
		res.Summary.Elapsed = time.Duration(res.RunFile.ElapsedS * float64(time.Second))
	}
	return res, nil, nil
}

// MergeFile is Merge into the results file out, which is written whole (atomically) only when
// the parts add up: with Problems it writes nothing. The merged run file, with args as its
// Args (the command that merged), goes beside out. out must be neither the input nor a part
// (a SetupError, Field "Output").
func MergeFile(input string, parts []string, out string, args []string) (*Merged, []Problem, error) {
	for _, p := range append([]string{input}, parts...) {
		if sameFile(p, out) {
			return nil, nil, &SetupError{"Output", fmt.Errorf("%s is also an input of the merge (%s): write the merged file elsewhere", out, p)}
		}
	}
	var res *Merged
	var problems []Problem
	errProblems := errors.New("the parts do not add up") // keeps atomicfile from writing out
	err := atomicfile.Write(out, func(w io.Writer) error {
		var err error
		if res, problems, err = Merge(input, parts, w); err == nil && len(problems) > 0 {
			err = errProblems
		}
		return err
	})
	switch {
	case errors.Is(err, errProblems):
		return res, problems, nil
	case err != nil:
		return nil, nil, err
	}
	if res.RunFile != nil {
		res.RunFile.Args = args
		if err := res.RunFile.Save(RunFilePath(out)); err != nil {
			return nil, nil, fmt.Errorf("writing the run file: %w", err)
		}
	}
	return res, nil, nil
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

// Merged is what a Merge wrote: the records' Summary (Elapsed from the first part's start to
// the last part's end, from their run files) and the merged RunFile (what the parts' run files
// agree on, the merged counts; nil when no part has a run file, and NoRunFiles set).
type Merged struct {
	Summary    Summary
	RunFile    *RunFile
	NoRunFiles bool
}

// Problem is one thing that keeps merged parts from adding up to their input: Line is the input
// line concerned (0: none), Detail a sentence for a person, and Kind one of
//
//	busy       a part still being written (its lock is held)
//	shard      a shard none of whose rows arrived
//	missing    an input line no part holds
//	duplicate  an input line two records hold
//	foreign    a record whose line is not in the input, or whose id is not that line's
//	cut        a part whose last line was cut short
//	norun      a part without a run file, beside parts with one
type Problem struct {
	Kind   string `json:"kind"`
	Line   int    `json:"line,omitempty"`
	Detail string `json:"detail"`
}

// inputKeys returns the rowKey of every line of the rows file, indexed by line number (index
// 0 unused), as Run names the rows it decides.
func inputKeys(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	keys := []string{""}
	sc := jsonl.NewScanner(f)
	for sc.Scan() {
		row, _ := contract.ParseRow(bytes.TrimSpace(sc.Line().Bytes))
		keys = append(keys, rowKey(row.ID, sc.Line().N))
	}
	return keys, sc.Err()
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
	problems []Problem
}

// readPart reads the records of part i (path), checking each against the input.
func (m *merger) readPart(i int, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if heldByOther(f) {
		m.problems = append(m.problems, Problem{"busy", 0, fmt.Sprintf("%s is still being written (a jev decide holds it): merge when its shard has ended", path)})
	}
	sc := jsonl.NewScanner(f)
	for sc.Scan() {
		l := sc.Line()
		n, line := l.N, l.Bytes
		if l.Cut {
			if len(bytes.TrimSpace(line)) > 0 {
				m.problems = append(m.problems, Problem{"cut", 0,
					fmt.Sprintf("%s ends with a cut line %d (%d bytes, a killed run): finish that shard with jev decide --resume", path, n, l.Size)})
			}
			break
		}
		rec, ok := parseHead(line)
		switch {
		case !ok || rec.Line == 0:
			return fmt.Errorf("%s line %d is %w with a line number (%.60q)", path, n, ErrNotRecord, line)
		case rec.Line < 1 || rec.Line >= len(m.keys):
			m.problems = append(m.problems, Problem{"foreign", 0,
				fmt.Sprintf("%s line %d: a record of input line %d, but the input has %d lines", path, n, rec.Line, len(m.keys)-1)})
		case rec.Key != m.keys[rec.Line]:
			m.problems = append(m.problems, Problem{"foreign", rec.Line,
				fmt.Sprintf("%s line %d: a record of id %s for input line %d, which has id %s", path, n, keyID(rec.Key), rec.Line, keyID(m.keys[rec.Line]))})
		case m.at[rec.Line].part != 0:
			first := m.at[rec.Line]
			m.problems = append(m.problems, Problem{"duplicate", rec.Line,
				fmt.Sprintf("input line %d (id %s): %s line %d and %s line %d", rec.Line, keyID(rec.Key), m.parts[first.part-1], first.partLineNo, path, n)})
		default:
			m.at[rec.Line] = recordAt{part: i + 1, off: l.Offset, n: int64(l.Size), partLineNo: n}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	return nil
}

// checkRunFiles records the parts without a run file when other parts have one (their
// model and flags cannot be checked against the others'), and reports whether no part has one.
func (m *merger) checkRunFiles(metas []*RunFile) (none bool) {
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
		m.problems = append(m.problems, Problem{"norun", 0, fmt.Sprintf("%s has no run file (%s), unlike the other parts: it cannot be checked to be decided like them", p, RunFilePath(p))})
	}
	return false
}

// checkMissing records the input lines without a record. When the parts' run files name
// their shards of one N, a shard none of whose lines arrived is named as such, and so is a
// shard whose part lacks rows and whose run file says the run did not finish.
func (m *merger) checkMissing(metas []*RunFile) {
	n := 0
	unfinished := map[int]string{} // shard → its part, when its run file says it did not finish
	for i, meta := range metas {
		if meta != nil && meta.Shard != "" {
			if s, err := ParseShard(meta.Shard, nil); err == nil {
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
			byShard[shardOf(l, n)]++
		}
		for i := range n {
			s := Shard{I: i, N: n}
			size := s.Size(len(m.keys) - 1)
			switch {
			case size > 0 && byShard[i] == size:
				m.problems = append(m.problems, Problem{"shard", 0,
					fmt.Sprintf("shard %s: none of its %d rows is in the parts: its file is missing (or empty); run jev decide --shard %s", s, size, s)})
				missing = slices.DeleteFunc(missing, func(l int) bool { return shardOf(l, n) == i })
			case byShard[i] > 0 && unfinished[i] != "":
				m.problems = append(m.problems, Problem{"shard", 0,
					fmt.Sprintf("shard %s: %d of its %d rows are missing, and the run file of %s says its run did not finish (killed?): rerun it with jev decide --shard %s --resume", s, byShard[i], size, unfinished[i], s)})
			}
		}
	}
	for _, l := range missing {
		m.problems = append(m.problems, Problem{"missing", l, fmt.Sprintf("input line %d (id %s)", l, keyID(m.keys[l]))})
	}
}

// write copies each input line's record, in input order, to w, counting them into sum.
func (m *merger) write(w io.Writer, sum *Summary) error {
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
		e, err := decodeEntry(bytes.TrimSuffix(buf, []byte("\n")))
		if err != nil {
			return fmt.Errorf("%s line %d: %w", parts[at.part-1], at.partLineNo, err)
		}
		switch {
		case e.Record != nil:
			sum.Add(e.Record.Result)
		case e.Answers != nil:
			sum.addAnswers(e.Answers)
		default:
			sum.AddError()
		}
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// partRunFiles reads the parts' run files (nil where a part has none) and checks that they
// agree on what decides (RunFile.Disagrees).
func partRunFiles(parts []string) ([]*RunFile, error) {
	metas := make([]*RunFile, len(parts))
	var first *RunFile
	var firstPath string
	for i, p := range parts {
		meta, err := RunFileOf(p)
		if err != nil {
			return nil, err
		}
		if meta == nil {
			continue
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

// mergedRunFile is the run file of the merged output: what the parts' run files agree on, the
// merged counts, and the wall time from the first part's start to the last part's end; nil
// when no part has a run file. Args is left for the caller (the merge command's).
func mergedRunFile(metas []*RunFile, in string, parts []string, sum *Summary) *RunFile {
	var out *RunFile
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
	out.Args, out.Input, out.Shard, out.Parts = nil, in, "", parts
	out.Finished = finished
	out.ElapsedS = end.Sub(out.Started).Seconds()
	out.Rows, out.Decided, out.Errors, out.Skipped = sum.Rows, sum.Decided, sum.Errors, 0
	out.DecisionsPerS, out.Invocations, out.DecidedAll, out.ElapsedAllS = 0, 0, 0, 0 // the parts' wall time, not one file's runs
	if out.ElapsedS > 0 {
		out.DecisionsPerS = float64(sum.Decided) / out.ElapsedS
	}
	return out
}
