package contract

// OptionScore is one listed option's readout in a direct decision.
type OptionScore struct {
	ID     string `json:"id"`     // the option's id from the row
	Letter string `json:"letter"` // its answer letter, A..P
	Token  int32  `json:"token"`  // the letter's token id (its slot)
	// Logit is the raw next-token logit of that token; nil (omitted) when the runtime does not
	// expose raw logits (llama-server's /completion gives log-probabilities only).
	Logit       *float64 `json:"logit,omitempty"`
	Logprob     float64  `json:"logprob"`     // log-softmax over the full vocabulary
	Probability float64  `json:"probability"` // softmax over the listed options only
}

// ScoreDirect reads a direct decision from the next-token logits at the prompt's last
// position (a row of length n_vocab): for option i, the logit of slot i, its log-probability
// over the whole vocabulary (logit - logsumexp(logits)), and the softmax over the listed
// options (contract.rs softmax). chosen is the index of the most probable option, the first on
// a tie. options must hold 1..16 entries (CheckOptionCount) and every slot must index logits;
// the caller guarantees both.
func ScoreDirect(logits []float32, slots Slots, options []Option) (scores []OptionScore, chosen int) {
	lse := LogSumExp(logits)
	raw := make([]float64, len(options))
	lps := make([]float64, len(options))
	for i := range options {
		raw[i] = float64(logits[slots[i]])
		lps[i] = raw[i] - lse
	}
	return ScoreReadout(lps, raw, slots, options)
}

// ScoreReadout scores a direct decision from the listed options' log-probabilities over the
// full vocabulary (logprobs[i] for slot i) and, when known, their raw logits (nil otherwise).
// Probability is the softmax over the listed options; it is the same whether taken over logits
// or log-probabilities, which differ by one constant (logsumexp of the whole row). chosen is
// the index of the most probable option, the first on a tie. len(logprobs) == len(options)
// (1..16); the caller guarantees it.
func ScoreReadout(logprobs, logits []float64, slots Slots, options []Option) (scores []OptionScore, chosen int) {
	probs := Softmax(logprobs)
	scores = make([]OptionScore, len(options))
	for i, o := range options {
		scores[i] = OptionScore{
			ID:          o.ID,
			Letter:      Letters[i : i+1],
			Token:       slots[i],
			Logprob:     logprobs[i],
			Probability: probs[i],
		}
		if logits != nil {
			l := logits[i]
			scores[i].Logit = &l
		}
		if probs[i] > probs[chosen] {
			chosen = i
		}
	}
	return scores, chosen
}
