package contract

// SampleRow is the decision the start-up boundary check renders (VerifyBoundary,
// VerifyBinaryBoundary): a support message with two options, shaped like real rows.
func SampleRow() Row {
	return Row{
		ID:       "sample",
		State:    "I was charged twice for the same purchase.",
		Question: "Which intent does this message express?",
		Options: []Option{
			{ID: "transaction_charged_twice", Description: "transaction_charged_twice"},
			{ID: "card_payment_fee_charged", Description: "card_payment_fee_charged"},
		},
	}
}
