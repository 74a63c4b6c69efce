package decide

import (
	"context"

	"github.com/gojev/gojev/contract"
)

// SlotInfo describes one answer slot: its letter, token id and the token's text.
type SlotInfo struct {
	Letter string `json:"letter"`
	Token  int32  `json:"token"`
	Piece  string `json:"piece"`
}

// Check is what the start-up checks found (jev check).
type Check struct {
	Backend            string     `json:"backend"`
	Renderer           string     `json:"renderer"`
	Slots              []SlotInfo `json:"slots"`
	TemplateSHA256     string     `json:"template_sha256,omitempty"`
	TemplateDate       string     `json:"template_date"`
	SamplePromptSHA256 string     `json:"sample_prompt_sha256"`
	SampleTokens       int        `json:"sample_prompt_tokens"`
	BoundaryHolds      bool       `json:"boundary_holds"`
}

// Check returns the start-up check results; a Decider exists only if they passed.
func (d *Decider) Check() Check { return d.check }

func (d *Decider) slotInfo(ctx context.Context) ([]SlotInfo, error) {
	out := make([]SlotInfo, len(d.slots))
	for i, t := range d.slots {
		piece, err := d.b.Detokenize(ctx, []int32{t})
		if err != nil {
			return nil, err
		}
		out[i] = SlotInfo{Letter: contract.Letters[i : i+1], Token: t, Piece: piece}
	}
	return out, nil
}

// SampleRow is the decision the start-up boundary check renders: a support message with two
// options, shaped like real rows.
func SampleRow() contract.Row {
	return contract.Row{
		ID:       "sample",
		State:    "I was charged twice for the same purchase.",
		Question: "Which intent does this message express?",
		Options: []contract.Option{
			{ID: "transaction_charged_twice", Description: "transaction_charged_twice"},
			{ID: "card_payment_fee_charged", Description: "card_payment_fee_charged"},
		},
	}
}
