package contract_test

import (
	"fmt"

	"github.com/gojev/gojev/contract"
)

func ExampleDirectMessages() {
	msgs, err := contract.DirectMessages("I was charged twice", "Which queue?", []contract.Option{
		{ID: "billing", Description: "Billing and refunds."},
		{ID: "sales", Description: "Pricing and contracts."},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(msgs[0].Role + ": " + msgs[0].Content)
	fmt.Println(msgs[1].Role + ": " + msgs[1].Content)
	// Output:
	// system: Apply the supplied criterion to the supplied evidence. Choose exactly one listed option. Respond with only its uppercase letter, with no explanation or reasoning.
	// user: {"evidence": "I was charged twice", "criterion": "Which queue?", "options": [{"letter": "A", "description": "Billing and refunds."}, {"letter": "B", "description": "Pricing and contracts."}]}
}

func ExampleSoftmax() {
	fmt.Printf("%.4f\n", contract.Softmax([]float64{2.0, 1.0, 0.1}))
	// Output: [0.6590 0.2424 0.0986]
}
