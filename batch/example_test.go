package batch_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/debias"
)

// modelFile is the GGUF model the examples open: the small test model (SmolLM2-135M,
// scripts/fetch-model.sh small), set by TestMain.
var modelFile string

// rowsFile writes n rows (each with three options) to a temporary folder and returns its path.
func rowsFile(dir string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "r%d", "state": {"message": "Order %d was charged twice."}, "question": "Which team?", "options": [{"id": "billing", "description": "Charges and refunds."}, {"id": "shipping", "description": "Parcels."}, {"id": "account", "description": "Logins."}], "label": "billing"}`+"\n", i, i)
	}
	path := filepath.Join(dir, "rows.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		log.Fatal(err)
	}
	return path
}

// A run stopped half-way (here by cancelling it after its second record; a kill -9 leaves the
// same: whole lines only) continues where it stopped: Resume keeps the records, and Run with
// its Skip decides only the rest. The file is then what one run would have written, and jev
// decide --resume could have continued it just as well.
func ExampleRun() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	dir, _ := os.MkdirTemp("", "batch-example")
	defer os.RemoveAll(dir)
	rows, results := rowsFile(dir, 6), filepath.Join(dir, "out.jsonl")

	// The first run, stopped after two records.
	out, err := os.Create(results)
	if err != nil {
		log.Fatal(err)
	}
	in, _ := os.Open(rows)
	stop, cancel := context.WithCancel(ctx)
	_, err = batch.Run(stop, d, in, out, batch.Config{Window: 1, OnRecord: func(_ any, s *batch.Summary) {
		if s.Rows == 2 {
			cancel()
		}
	}})
	in.Close()
	out.Close()
	fmt.Println("stopped:", err != nil)

	// The resumed run.
	res, err := batch.OpenResume(results)
	if err != nil {
		log.Fatal(err)
	}
	in, _ = os.Open(rows)
	sum, err := batch.Run(ctx, d, in, res, batch.Config{Skip: res.Skip})
	in.Close()
	if err := res.Close(); err != nil {
		log.Fatal(err)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("kept %d, skipped %d, decided %d\n", res.Records, sum.Skipped, sum.Decided)
	f, _ := os.Open(results)
	defer f.Close()
	entries, _, err := batch.ReadEntries(f)
	if err != nil {
		log.Fatal(err)
	}
	for _, e := range entries {
		fmt.Print(e.Record.Line, " ")
	}
	fmt.Println()
	// Output:
	// stopped: true
	// kept 2, skipped 2, decided 4
	// 1 2 3 4 5 6
}

// Two shards of one file, decided apart (by two processes, or two array tasks), and joined in
// input order after Merge has checked that every input line has exactly one record.
func ExampleMerge() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	dir, _ := os.MkdirTemp("", "batch-example")
	defer os.RemoveAll(dir)
	rows := rowsFile(dir, 5)
	var parts []string
	for i := range 2 {
		part := filepath.Join(dir, fmt.Sprintf("part-%d.jsonl", i))
		out, _ := os.Create(part)
		in, _ := os.Open(rows)
		if _, err := batch.Run(ctx, d, in, out, batch.Config{Shard: batch.Shard{I: i, N: 2}}); err != nil {
			log.Fatal(err)
		}
		in.Close()
		out.Close()
		parts = append(parts, part)
	}
	var merged strings.Builder
	m, problems, err := batch.Merge(rows, parts, &merged)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("problems:", len(problems), "records:", m.Summary.Rows, "lines:", strings.Count(merged.String(), "\n"))

	// Without shard 1's part, Merge writes nothing and says which rows are missing.
	merged.Reset()
	_, problems, _ = batch.Merge(rows, parts[:1], &merged)
	for _, p := range problems {
		fmt.Println(p.Kind, p.Line)
	}
	fmt.Println("written:", merged.Len())
	// Output:
	// problems: 0 records: 5 lines: 5
	// missing 2
	// missing 4
	// written: 0
}

// A Job decides a rows file as jev decide does: here with PriDe, whose prior it estimates on
// the sample and saves, the run file written beside the results. The same Job again, with
// Resume, finds every row decided (and reads the prior from its file).
func ExampleJob() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "batch-example")
	defer os.RemoveAll(dir)
	job := &batch.Job{
		Input:     rowsFile(dir, 12),
		Output:    filepath.Join(dir, "out.jsonl"),
		Options:   gojev.Options{Debias: debias.PriDe},
		PriorFile: filepath.Join(dir, "prior.json"),
		Open: func(ctx context.Context, o gojev.Options) (*gojev.Decider, error) {
			o.Runtime.NThreads = 2
			return gojev.Open(ctx, modelFile, o)
		},
		OnPrior: func(ev batch.PriorEvent) {
			if ev.Step == batch.PriorEstimating {
				fmt.Printf("estimating the prior on %d of %d rows\n", ev.SampleRows, ev.Rows)
			}
		},
	}
	sum, err := job.Run(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("decided", sum.Decided)
	meta, err := batch.ReadRunFile(batch.RunFilePath(job.Output))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("run file:", meta.Debias, meta.Finished, meta.Prior.ByOptions[3].Letters)

	job.Resume = true
	if sum, err = job.Run(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Println("skipped", sum.Skipped, "decided", sum.Decided)
	// Output:
	// estimating the prior on 10 of 12 rows
	// decided 12
	// run file: pride true ABC
	// skipped 12 decided 0
}
