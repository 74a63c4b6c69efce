// Package gojev makes LLM decisions in-process: it renders a fixed decision prompt through a
// model's own chat template, reads the next-token logits of the answer tokens, and returns the
// chosen option with its probability. A Decider is the one type a program holds.
//
// # Concurrency
//
// A Decider is safe for concurrent use by any number of goroutines, and a program needs only
// one per model. Decide blocks until its row is decided; meanwhile one scheduler goroutine
// owns the runtime: it takes every prompt waiting (a round), decodes them in a depth-first
// walk of their tokens' trie that serves the oldest request first, and hands each request its
// result, so requests finish in the order they were made. Concurrent requests are thereby batched:
// the tokens their prompts share (the system prompt, the template's head, one row's evidence
// for its binary candidates) are decoded once per round, not once per request. Results never
// depend on what else is decided at the same time: each prompt's logits are bit-identical to
// deciding it alone (package backend explains how). A cancelled context returns at once; the
// request's prompts are dropped from the round. Close aborts the decode in flight and fails
// the requests still waiting with an error wrapping llama.ErrClosed. Preparing a row (rendering,
// the boundary check's tokenizations) runs in the calling goroutine; where the CPU decodes, it
// waits while a decode runs (both want every core), and where every layer is on a GPU it
// overlaps the decode.
//
// A typical use is an HTTP handler that embeds the judge:
//
//	d, err := gojev.Open(ctx, "model.gguf", gojev.Options{})
//	if err != nil { ... }
//	defer d.Close()
//	http.HandleFunc("POST /decide", func(w http.ResponseWriter, r *http.Request) {
//		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
//		row, err := contract.ParseRow(body) // {"id", "state", "question", "options"}
//		if err == nil {
//			var res *gojev.Result
//			if res, err = d.Decide(r.Context(), row); err == nil { // concurrent requests share decodes
//				json.NewEncoder(w).Encode(res)
//				return
//			}
//		}
//		http.Error(w, err.Error(), http.StatusBadRequest)
//	})
//
// DecideAll decides a slice of rows together (an offline evaluation), results in input order.
// Begin and Call.Wait are Decide's two halves: a reader that streams rows calls Begin in input
// order and waits concurrently, so the scheduler, which serves the oldest request first,
// finishes rows in that order (batch.Run does this).
//
// # Runtimes
//
// Open loads a GGUF model into this process through llama.cpp (package llama, the one cgo
// package; build it with `make` in a clone, or from any module with
// `eval "$(go run github.com/gojev/gojev/cmd/gojev-native install)"`). New wraps any
// backend.Backend instead, such as backend.NewHTTP for a running llama-server: the same
// checks, scheduling, scoring and bias control run on either, through the same code. Without
// cgo (CGO_ENABLED=0) the package still builds; Open then returns ErrNoCgo and New works with
// the HTTP runtime.
//
// # Typed questions
//
// Ask decides named typed questions about one state together, as TypeSafe's System One API
// asks them (package systemone serves and calls the API): a Choice (which of named criteria
// applies), a Score (a level of an ordered rubric, answered with the expected level) and a Noul
// (a yes/no question, answered with P(yes)). Choices and scores are rows of the Decider's
// contract, the seed's prompts unchanged; a noul has its own prompt, noul-v1:
//
//	answers, err := d.Ask(ctx, "I was charged twice.", map[string]gojev.Question{
//		"billing": gojev.Noul{Instructions: "Is this about billing?"},
//		"urgency": gojev.Score{Instructions: "How urgent?", Levels: []any{"Can wait", "Today"}},
//	})
//
// # Contracts
//
// Direct (direct-options-v1, the default) renders one prompt per row and reads the letter
// logits A..P at its last position, softmax over the listed options. Binary
// (binary-candidates-v1) renders one yes/no prompt per option and ranks the candidates by
// p_yes. The prompts are the seed's, byte for byte (package contract); every Result carries
// its prompt_version and prompt_sha256. Open and New refuse a model that fails the contract's
// start-up checks (answer slots single, unique, round-tripping; the answer boundary).
//
// # Bias control
//
// Options.Debias adds debiased scores beside the raw ones without changing a prompt (package
// debias): PriDe divides an estimated letter prior out of one decode per row (EstimatePrior,
// SetPrior, or Options.Prior from a saved file); Cyclic decides a row under all k cyclic
// permutations of its options, decoded together so their common prefix is decoded once;
// Contextual calibrates the binary contract's p_yes against content-free evidence. Result.Debias
// keeps the raw choice. Options.Permute decides each row under N evenly spaced cyclic shifts
// instead of all k (with PriDe, the prior is divided out of each).
//
// # Calibration and abstention
//
// Raw and debiased probabilities rank decisions well but are not frequencies (the default
// model's are far too low). Options.Calibration takes a profile that jev calibrate fits from
// labelled results (package calibrate: temperature scaling, Platt scaling, histogram binning or
// isotonic regression, chosen by cross-validation): Result.Probability is then the calibrated
// probability of the choice and Result.Calibration records the map, leaving every raw field
// and the choice as they were. Options.AbstainBelow marks results below a threshold as
// Abstained; Profile.Threshold chooses the threshold that keeps the error rate of the rows
// decided within a budget with a chosen confidence (Geifman & El-Yaniv's SGR):
//
//	p, err := calibrate.Load("profile.json") // jev calibrate results.jsonl -o profile.json
//	th, err := p.Threshold(gojev.Options{}.Scoring(0), 0.10, 0.9)
//	d, err := gojev.Open(ctx, "model.gguf", gojev.Options{Calibration: p, AbstainBelow: th.Probability})
package gojev
