package gojev

import (
	"context"
	"fmt"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// SlotInfo describes one answer token: its text (a letter, or a yes/no spelling), token id and
// the token's text as the runtime detokenizes it.
type SlotInfo struct {
	Letter string `json:"letter,omitempty"`
	Token  int32  `json:"token"`
	Piece  string `json:"piece"`
}

// Check is what the start-up checks found (jev check).
type Check struct {
	PromptVersion string `json:"prompt_version"`
	Backend       string `json:"backend"`
	Renderer      string `json:"renderer"`
	// Decode is the in-process runtime's decode mode (Result.Decode); empty over HTTP.
	Decode string `json:"decode,omitempty"`
	// Slots are the direct contract's sixteen answer letters; Yes and No the binary
	// contract's single-token spellings.
	Slots          []SlotInfo `json:"slots,omitempty"`
	Yes            []SlotInfo `json:"yes,omitempty"`
	No             []SlotInfo `json:"no,omitempty"`
	TemplateSHA256 string     `json:"template_sha256,omitempty"`
	TemplateDate   string     `json:"template_date"`
	// Model describes the model file an in-process runtime loaded (nil over HTTP: the weights
	// are the server's).
	Model              *backend.ModelInfo `json:"model,omitempty"`
	SamplePromptSHA256 string             `json:"sample_prompt_sha256"`
	SampleTokens       int                `json:"sample_prompt_tokens"`
	BoundaryHolds      bool               `json:"boundary_holds"`
}

// startupChecks resolves the contract's answer tokens, renders contract.SampleRow and checks
// the boundary on it, and fills d.check.
func (d *Decider) startupChecks(ctx context.Context) error {
	tok := backend.Tokenizer(ctx, d.rt)
	d.check = Check{PromptVersion: d.opts.Contract.String(), Backend: d.rt.Name(), Renderer: d.rt.Renderer(),
		Decode:       decodeMode(d.rt),
		TemplateDate: templateDate(d.rt.TemplateTime())}
	if m, ok := d.rt.(backend.Modeler); ok {
		info := m.ModelInfo()
		d.check.Model = &info
	}
	info := func(ids []int32, letters bool) ([]SlotInfo, error) {
		out := make([]SlotInfo, len(ids))
		for i, t := range ids {
			piece, err := d.rt.Detokenize(ctx, []int32{t})
			if err != nil {
				return nil, err
			}
			out[i] = SlotInfo{Token: t, Piece: piece}
			if letters {
				out[i].Letter = contract.Letters[i : i+1]
			}
		}
		return out, nil
	}
	var err error
	if d.opts.Contract.lettered() {
		if d.slots, err = contract.ResolveSlots(tok); err != nil {
			return fmt.Errorf("the model fails the start-up checks: %w", err)
		}
		d.check.Slots, err = info(d.slots[:], true)
	}
	if err == nil {
		// Yes and no are the binary contract's and the detector's answers, which a model
		// must spell as single tokens to serve them, and a noul question's answer under any
		// contract: a model that cannot spell them fails only its noul questions then.
		needed := d.opts.Contract == Binary || d.opts.Detect
		d.bslots, d.bslotsErr = contract.ResolveBinarySlots(tok)
		switch {
		case d.bslotsErr != nil && needed:
			return fmt.Errorf("the model fails the start-up checks: %w", d.bslotsErr)
		case needed:
			if d.check.Yes, err = info(d.bslots.Yes, false); err == nil {
				d.check.No, err = info(d.bslots.No, false)
			}
		}
	}
	if err != nil {
		return err
	}
	ps, err := d.Render(ctx, contract.SampleRow())
	if err != nil {
		return fmt.Errorf("the model fails the start-up checks on the sample row: %w", err)
	}
	if d.opts.Detect {
		if _, err := d.detectPrompt(ctx, contract.SampleRow()); err != nil {
			return fmt.Errorf("the model fails the start-up checks on the injection detector's prompt: %w", err)
		}
	}
	d.check.SamplePromptSHA256, d.check.SampleTokens, d.check.BoundaryHolds = ps[0].SHA256, ps[0].NTokens, true
	if t, ok := d.rt.(interface{ TemplateSHA256() string }); ok {
		d.check.TemplateSHA256 = t.TemplateSHA256()
	}
	return nil
}
