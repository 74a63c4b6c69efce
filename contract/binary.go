package contract

import (
	"math"
	"slices"
	"sort"
)

// TokenScore is one answer token's readout at a prompt's last position.
type TokenScore struct {
	Token int32 `json:"token"` // the token id (a BinarySlots entry)
	// Logit is its raw next-token logit; nil when the runtime returns log-probabilities only
	// (llama-server's /completion).
	Logit   *float64 `json:"logit,omitempty"`
	Logprob float64  `json:"logprob"` // log-softmax over the full vocabulary: logit - logsumexp(logits)
}

// BinaryScore is one candidate's yes/no readout under binary-candidates-v1.
type BinaryScore struct {
	// PYes is softmax([logsumexp(yes logits), logsumexp(no logits)])[0]: the probability of
	// "yes" against "no", every single-token spelling of a word pooled. In [0, 1].
	PYes float64      `json:"p_yes"`
	Yes  []TokenScore `json:"yes"` // one entry per BinarySlots.Yes id, in that order
	No   []TokenScore `json:"no"`  // one entry per BinarySlots.No id, in that order
}

// BinaryIDs returns the ids a binary readout reads: slots.Yes then slots.No.
func BinaryIDs(slots BinarySlots) []int32 {
	return append(append(make([]int32, 0, len(slots.Yes)+len(slots.No)), slots.Yes...), slots.No...)
}

// ScoreBinary reads one candidate's yes/no judgement from the next-token logits at its
// prompt's last position (a row of length n_vocab): per yes/no token its raw logit and its
// log-probability over the whole vocabulary (logit - LogSumExp(logits), as ScoreDirect's
// Logprob), and PYes (ScoreBinaryReadout). slots come from ResolveBinarySlots (both groups
// non-empty, every id indexing logits); the caller guarantees that.
func ScoreBinary(logits []float32, slots BinarySlots) BinaryScore {
	lse := LogSumExp(logits)
	ids := BinaryIDs(slots)
	raw := make([]float64, len(ids))
	lps := make([]float64, len(ids))
	for i, id := range ids {
		raw[i] = float64(logits[id])
		lps[i] = raw[i] - lse
	}
	return ScoreBinaryReadout(lps, raw, slots)
}

// ScoreBinaryReadout scores one candidate from the log-probabilities (over the full
// vocabulary) of BinaryIDs(slots), in that order, and their raw logits when known (nil
// otherwise): PYes = softmax([logsumexp(yes), logsumexp(no)])[0], over the logits when known,
// else over the log-probabilities (the two differ by one constant, which cancels).
func ScoreBinaryReadout(logprobs, logits []float64, slots BinarySlots) BinaryScore {
	vals := logprobs
	if logits != nil {
		vals = logits
	}
	read := func(off int, ids []int32) []TokenScore {
		out := make([]TokenScore, len(ids))
		for i, id := range ids {
			out[i] = TokenScore{Token: id, Logprob: logprobs[off+i]}
			if logits != nil {
				l := logits[off+i]
				out[i].Logit = &l
			}
		}
		return out
	}
	n := len(slots.Yes)
	return BinaryScore{PYes: PYes(vals[:n], vals[n:]), Yes: read(0, slots.Yes), No: read(n, slots.No)}
}

// logSumExp64 is LogSumExp for a few float64 values (-Inf when empty).
func logSumExp64(values []float64) float64 {
	maximum := math.Inf(-1)
	for _, v := range values {
		maximum = max(maximum, v)
	}
	if math.IsInf(maximum, 0) {
		return maximum
	}
	total := 0.0
	for _, v := range values {
		total += math.Exp(v - maximum)
	}
	return maximum + math.Log(total)
}

// CandidateScore is one option's result in a binary-candidates-v1 decision.
type CandidateScore struct {
	ID            string `json:"id"`              // the option's id from the row
	PromptSHA256  string `json:"prompt_sha256"`   // PromptSHA256 of this candidate's rendered prompt
	NPromptTokens int    `json:"n_prompt_tokens"` // tokens of that prompt
	Rank          int    `json:"rank"`            // 1 for the highest PYes; ties keep option order
	BinaryScore
}

// RankCandidates ranks candidates by PYes, highest first, ties in option order: it sets each
// Rank (1-based) and returns the index of the chosen candidate (rank 1). It returns -1 for an
// empty slice.
func RankCandidates(cands []CandidateScore) (chosen int) {
	if len(cands) == 0 {
		return -1
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cands[order[a]].PYes > cands[order[b]].PYes })
	for r, i := range order {
		cands[i].Rank = r + 1
	}
	return order[0]
}

// BinarySpellings returns the texts of the single-token spellings ResolveBinarySlots accepted,
// each with its token: for each word, "word" then " word", skipping spellings that are not
// one token or repeat an id. It lets a caller check the answer boundary for every spelling.
func BinarySpellings(tok Tokenizer, slots BinarySlots) (texts []string, ids []int32) {
	for w, word := range BinaryWords {
		group := slots.Yes
		if w == 1 {
			group = slots.No
		}
		for _, spelling := range []string{word, " " + word} {
			got, err := tok.Tokenize(spelling)
			if err != nil || len(got) != 1 || !slices.Contains(group, got[0]) || slices.Contains(ids, got[0]) {
				continue
			}
			texts, ids = append(texts, spelling), append(ids, got[0])
		}
	}
	return texts, ids
}

// VerifyBinaryBoundary is VerifyBoundary for a binary prompt: for every single-token yes/no
// spelling (BinarySpellings), tokenize(prompt + spelling) must equal tokenize(prompt) followed
// by that spelling's token, so the scored logit belongs to the token the model would emit.
// It returns the prompt's tokens. Errors: ErrEmptyPrompt, ErrBoundary (names the spelling).
func VerifyBinaryBoundary(tok Tokenizer, prompt string, slots BinarySlots) ([]int32, error) {
	texts, ids := BinarySpellings(tok, slots)
	return verifyBoundary(tok, prompt, texts, ids, "spelling")
}

// PYes is softmax([logsumexp(yes), logsumexp(no)])[0] for yes/no values that are logits or
// log-probabilities of one position (the shift between them cancels): ScoreBinary's PYes for a
// runtime that returns log-probabilities only.
func PYes(yes, no []float64) float64 {
	return Softmax([]float64{logSumExp64(yes), logSumExp64(no)})[0]
}
