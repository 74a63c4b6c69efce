// Command knockout-recombine rewrites a results file's knockout records (rows of more than 16
// options) with this build's choice rule, from the passes they record, without decoding:
// gojev.RecombineKnockout on each. Records written before the passes were combined by least
// squares carry the final pass's own choice; this gives what `jev decide` writes now for the
// same passes (decoding is deterministic per prompt). Other lines are copied as they are, and
// the run file (IN.run.json) is copied beside OUT so that `jev report` reads its totals.
//
//	go run ./internal/app/knockout-recombine IN.jsonl OUT.jsonl
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/jsonl"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./internal/app/knockout-recombine IN.jsonl OUT.jsonl")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "knockout-recombine:", err)
		os.Exit(1)
	}
}

func run(in, out string) error {
	src, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	changed, n := 0, 0
	sc := jsonl.NewScanner(bytes.NewReader(src))
	for sc.Scan() {
		b, line := sc.Line().Bytes, sc.Line().N
		var rec batch.Record
		if json.Unmarshal(b, &rec) != nil || rec.Result == nil || rec.Knockout == nil {
			buf.Write(b)
			buf.WriteByte('\n')
			continue
		}
		before := rec.Chosen
		if err := gojev.RecombineKnockout(rec.Result); err != nil {
			return fmt.Errorf("%s line %d: %w", in, line, err)
		}
		n++
		if rec.Chosen != before {
			changed++
		}
		nb, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		buf.Write(nb)
		buf.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if rf, err := os.ReadFile(in + ".run.json"); err == nil {
		if err := os.WriteFile(out+".run.json", rf, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "%d knockout records recombined, %d choices changed: %s\n", n, changed, out)
	return nil
}
