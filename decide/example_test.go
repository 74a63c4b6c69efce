package decide_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/decide"
)

// A service embeds a judge: open the model once (the start-up checks run here), then decide
// rows as they come. Needs a model: $JEV_MODEL, or run `make model`.
func Example() {
	d, err := decide.Open(os.Getenv("JEV_MODEL"), decide.Options{NThreads: 2})
	if err != nil {
		log.Fatal(err) // e.g. a model whose answer letters are not single tokens
	}
	defer d.Close()

	row, err := contract.ParseRow([]byte(`{"id": "t1", "state": {"message": "I was charged twice."},
		"question": "Which team should handle this ticket?",
		"options": [{"id": "billing", "description": "Charges and refunds."},
		            {"id": "shipping", "description": "Deliveries and parcels."}]}`))
	if err != nil {
		log.Fatal(err)
	}
	dec, err := d.Decide(context.Background(), row)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(dec.Chosen, dec.PromptVersion, dec.PromptSHA256)
	for _, o := range dec.Options {
		fmt.Printf("%s %s p=%.3f logprob=%.2f\n", o.Letter, o.ID, o.Probability, o.Logprob)
	}
}
