package gojev_test

import (
	"context"
	"fmt"
	"log"
	"sync"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/backend/backendtest"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// modelFile is the GGUF model the examples open: here the small test model (SmolLM2-135M,
// scripts/fetch-model.sh small), set by TestMain.
var modelFile string

// ticket is a decision row as a service builds it: evidence, a criterion, options.
var ticket = gojev.Row{
	ID:       "t1",
	State:    map[string]any{"channel": "email", "message": "I was charged twice for the same order, please refund one."},
	Question: "Which team should handle this ticket?",
	Options: []gojev.Option{
		{ID: "billing", Description: "Charges, refunds and invoices."},
		{ID: "shipping", Description: "Deliveries, parcels and tracking."},
		{ID: "account", Description: "Logins, passwords and profile settings."},
	},
}

// A service embeds a judge: open the model once (the start-up checks run here), then decide
// rows as they come, from any number of goroutines.
func Example() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err) // e.g. a model whose answer letters are not single tokens
	}
	defer d.Close()
	res, err := d.Decide(ctx, ticket)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.PromptVersion, res.Chosen, res.ChosenLetter, len(res.Options), len(res.PromptSHA256))
	// Output: direct-options-v1 billing A 3 64
}

// The binary contract asks one yes/no question per option and ranks the options by p_yes.
func Example_binary() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Contract: gojev.Binary, Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	res, err := d.Decide(ctx, ticket)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.PromptVersion, res.Chosen)
	for _, c := range res.Candidates {
		fmt.Println(c.ID, "rank", c.Rank, len(c.PromptSHA256))
	}
	// Output:
	// binary-candidates-v1 shipping
	// billing rank 3 64
	// shipping rank 1 64
	// account rank 2 64
}

// An offline evaluation decides many rows at once (the small model the example runs on is no
// better than chance: row 1 is wrong): rows next to each other share their
// decodes, results come back in input order, and a bad row is its own Outcome's error.
func ExampleDecider_DecideAll() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	question := "Which team should handle this ticket?"
	teams := []gojev.Option{{ID: "billing", Description: "Charges and refunds."}, {ID: "shipping", Description: "Deliveries and parcels."}}
	rows := []gojev.Row{
		{ID: 1, State: "My parcel never arrived.", Question: question, Options: teams},
		{ID: 2, State: "I was charged twice.", Question: question, Options: teams},
		{ID: 3, State: "I cannot log in.", Question: question, Options: []gojev.Option{{ID: "account"}, {ID: "account"}}},
	}
	outs, err := d.DecideAll(ctx, rows)
	if err != nil {
		log.Fatal(err) // only a cancelled context or a closed Decider
	}
	for i, o := range outs {
		if o.Err != nil {
			fmt.Println(rows[i].ID, "error:", o.Err)
			continue
		}
		fmt.Println(string(o.Result.ID), o.Result.Chosen)
	}
	// Output:
	// 1 billing
	// 2 billing
	// 3 error: bad row: duplicate option id "account"
}

// A stream of rows: Begin each row as it is read, in order, and wait for the results
// concurrently; the scheduler serves the oldest request first, so rows finish in the order
// they were begun and the first result is never held up by later rows.
func ExampleDecider_Begin() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	var calls []*gojev.Call
	for _, msg := range []string{"My parcel never arrived.", "I was charged twice."} {
		row := ticket
		row.State = msg
		c, err := d.Begin(ctx, row) // a bad row is refused here
		if err != nil {
			log.Fatal(err)
		}
		calls = append(calls, c)
	}
	results, errs := make([]*gojev.Result, len(calls)), make([]error, len(calls))
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Go(func() { results[i], errs[i] = c.Wait(ctx) })
	}
	wg.Wait()
	for i, r := range results {
		if errs[i] != nil {
			log.Fatal(errs[i])
		}
		fmt.Println(r.Chosen, len(r.Options))
	}
	// Output:
	// billing 3
	// billing 3
}

// Position bias: PriDe estimates the model's prior over answer letters once, from a few
// unlabelled rows decided under every cyclic permutation of their options, then divides it out
// of one decode per row. Each Result keeps the raw choice beside the debiased one.
func Example_pride() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Debias: debias.PriDe, Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	sample := []gojev.Row{ticket, contract.SampleRow()}
	prior, _, err := d.EstimatePrior(ctx, sample)
	if err != nil {
		log.Fatal(err)
	}
	d.SetPrior(prior) // or save it (prior.Save) and pass Options.Prior later
	res, err := d.Decide(ctx, ticket)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Debias.Method, res.Chosen, "raw:", res.Debias.RawChosen, len(res.Debias.Prior))
	// Output: pride shipping raw: billing 3
}

// New wraps any runtime instead of loading a model: backend.NewHTTP for a running llama-server
// (backend.NewHTTP("http://127.0.0.1:8080", backend.HTTPOptions{})), or, in a test of code that
// holds a Decider, backendtest's Scripted, whose logits the test writes. The same checks,
// scheduling, scoring and bias control run on either through the same code.
func ExampleNew() {
	ctx := context.Background()
	rt := &backendtest.Scripted{Scores: map[string]float64{"Charges, refunds and invoices.": 2}}
	d, err := gojev.New(ctx, rt, gojev.Options{})
	if err != nil {
		log.Fatal(err) // the runtime fails the start-up checks
	}
	defer d.Close()
	res, err := d.Decide(ctx, ticket)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s %s %.3f %s\n", res.Chosen, res.ChosenLetter, res.Probability, res.Backend)
	// Output: billing A 0.787 scripted
}

// Calibrated probabilities and abstention: a profile (jev calibrate fits one from labelled
// results; here a hand-made temperature) turns the raw probability into a calibrated one, and
// rows below the threshold are marked to go to a person. The choice and the raw fields stay.
func Example_calibrated() {
	ctx := context.Background()
	profile := &calibrate.Profile{Format: calibrate.Format, PromptVersion: contract.PromptVersion,
		Scorings: map[string]*calibrate.Scoring{calibrate.ScoringRaw: {
			Choice: calibrate.Choice{Method: calibrate.Temperature},
			Fitted: &calibrate.Fitted{Method: calibrate.Temperature, Pooled: calibrate.Map{Method: calibrate.Temperature, T: 0.5}},
		}}}
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Calibration: profile, AbstainBelow: 0.99, Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	res, err := d.Decide(ctx, ticket)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Chosen, res.Calibration.Method, res.Probability > res.Calibration.UncalibratedProbability, res.Abstained)
	// Output: billing temperature true true
}

// A row of more than 16 options (up to 256) goes through the same Decide: it is decided in
// passes of at most 16 options, each an ordinary direct-options-v1 prompt (the knockout), and
// the result keeps the final pass's seed fields, every pass, and one probability per option.
// Here 20 options: two groups of 10, the best 8 of each survive into a final pass of 16.
func Example_knockout() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Knockout: gojev.KnockoutOptions{Method: gojev.ManyKnockout},
		Runtime: backend.InProcessOptions{NThreads: 2}}) // the default decides such rows by shortlist
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	row := ticket
	row.Options = nil
	for i := range 20 {
		row.Options = append(row.Options, gojev.Option{ID: fmt.Sprintf("queue-%02d", i), Description: fmt.Sprintf("Support queue number %d.", i)})
	}
	row.Options[13] = gojev.Option{ID: "billing", Description: "Charges, refunds and invoices."}
	res, err := d.Decide(ctx, row)
	if err != nil {
		log.Fatal(err)
	}
	ko := res.Knockout
	sum := 0.0
	for _, p := range ko.Distribution {
		sum += p.Probability
	}
	last := ko.Passes[len(ko.Passes)-1]
	fmt.Println(len(ko.Passes), ko.Grouping, last.Final, len(last.Options), len(ko.Distribution), fmt.Sprintf("%.6f", sum))
	fmt.Println(res.Chosen, res.PromptVersion) // the small test model's choice; Distribution's argmax
	// Output:
	// 3 shuffle true 16 20 1.000000
	// queue-00 direct-options-v1
}

// A choice question (System One's "choice"): which of named criteria applies to a state. It is
// a row of the direct contract: the state is the evidence, the instructions the criterion, the
// criteria the options. The answer is the chosen name, a probability per name and the
// confidence (the top probability's margin over uniform).
func ExampleDecider_Ask_choice() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	answers, err := d.Ask(ctx, "I was charged twice. Please help.", map[string]gojev.Question{
		"tone": gojev.Choice{Instructions: "What is the tone of this message?", Criteria: []gojev.Criterion{
			{Name: "calm", Description: "A neutral or polite message"}, {Name: "angry", Description: "An upset or hostile message"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	a := answers["tone"]
	fmt.Printf("%s p=%.3f confidence=%.3f %s\n", a.Choice, a.Probabilities[a.Choice], a.Confidence, a.Result.PromptVersion)
	// Output: calm p=0.965 confidence=0.929 direct-options-v1
}

// A score question (System One's "score"): a level of an ordered rubric, lowest first. The
// levels are the options "0" … "n−1", read listed and reversed (Options.ScoreReading), the two
// reads combined; the answer is the expected level Σ i·pᵢ, the level probabilities, and the
// legend echoing each level.
func ExampleDecider_Ask_score() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	answers, err := d.Ask(ctx, "The server is down and customers cannot pay.", map[string]gojev.Question{
		"urgency": gojev.Score{Instructions: "How urgent is this message?", Levels: []any{"Can wait", "Needs attention this week", "Needs attention today"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	a := answers["urgency"]
	fmt.Printf("score=%.2f p(today)=%.3f legend[2]=%q\n", a.Score, a.Probabilities["2"], a.Legend["2"])
	// Output: score=1.02 p(today)=0.314 legend[2]="Needs attention today"
}

// A noul question (System One's "noul"): a yes/no question, or a statement to judge, with no
// candidates. It has its own prompt, noul-v1 (the seed's yes/no system text), and its answer is
// P(yes).
func ExampleDecider_Ask_noul() {
	ctx := context.Background()
	d, err := gojev.Open(ctx, modelFile, gojev.Options{Runtime: backend.InProcessOptions{NThreads: 2}})
	if err != nil {
		log.Fatal(err)
	}
	defer d.Close()
	answers, err := d.Ask(ctx, map[string]any{"subject": "WIN A FREE CRUISE", "body": "Click here to claim your prize!"}, map[string]gojev.Question{
		"spam": gojev.Noul{Instructions: "This message is unsolicited advertising.", True: "Unsolicited advertising", False: "A legitimate conversation"},
	})
	if err != nil {
		log.Fatal(err)
	}
	a := answers["spam"]
	fmt.Printf("P(yes)=%.3f %s\n", a.Noul, a.Result.PromptVersion)
	// Output: P(yes)=0.864 noul-v1
}
