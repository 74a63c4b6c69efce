package engine_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/engine"
)

// A service controls position bias with PriDe: estimate the letter prior once from a few
// unlabelled rows (or load a saved one with debias.LoadPrior), then every decision costs one
// decode. Each Result keeps the raw scores and adds the debiased ones. Needs a model:
// $JEV_MODEL, or run `make model`.
func Example_pride() {
	e, err := engine.Open(os.Getenv("JEV_MODEL"), engine.Options{Debias: debias.PriDe, NThreads: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	var sample, rows []contract.Row // rows parsed with contract.ParseRow
	prior, _, err := e.EstimatePrior(context.Background(), sample)
	if err != nil {
		log.Fatal(err)
	}
	e.SetPrior(prior)
	_ = prior.Save("prior.json") // reuse: engine.Options{Prior: p} with p from debias.LoadPrior
	for _, row := range rows {
		res, err := e.Decide(context.Background(), row)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Chosen, res.Probability, "raw:", res.Debias.RawChosen, "prior:", res.Debias.Prior)
	}
}
