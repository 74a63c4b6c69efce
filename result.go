package gojev

import (
	"encoding/json"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

// Result is one row's decision, under either contract. Direct: PromptSHA256, ChosenLetter
// and Options (each option's logit, logprob and probability; Logit nil over HTTP). Binary:
// Candidates, one per option in row order (a shortlist's: one per kept option), each with its
// own prompt_sha256, p_yes, yes/no readouts and rank. Chosen is the chosen option's id and
// Probability its probability: among the listed options (direct), its p_yes (binary), or its
// share of the distribution over every option (Shortlist, Knockout); the debiased or
// calibrated one under bias control or calibration, whose Debias and Calibration keep the raw.
type Result struct {
	ID            json.RawMessage           `json:"id"`
	PromptVersion string                    `json:"prompt_version"`
	PromptSHA256  string                    `json:"prompt_sha256,omitempty"`
	NPromptTokens int                       `json:"n_prompt_tokens"`
	Chosen        string                    `json:"chosen"`
	ChosenLetter  string                    `json:"chosen_letter,omitempty"`
	Probability   float64                   `json:"probability"`
	Options       []contract.OptionScore    `json:"options,omitempty"`
	Candidates    []contract.CandidateScore `json:"candidates,omitempty"`
	Label         string                    `json:"label,omitempty"`
	Correct       *bool                     `json:"correct,omitempty"`
	// Debias is what bias control added (nil without Options.Debias).
	Debias *Debiased `json:"debias,omitempty"`
	// Calibration is what a calibration profile added (Options.Calibration, or under the
	// default settings the model's shipped profile, calibrate.ShippedProfile, where it covers
	// the row; else nil); Probability is then calibrated.
	Calibration *Calibration `json:"calibration,omitempty"`
	// Uncalibrated says, under the default settings (no Options.Calibration given, Debias
	// debias.Default), that no calibration covers this row: the model has no shipped profile
	// (calibrate.ShippedProfile), or the row's option count or scoring lies outside it.
	// Probability is then the model's own.
	Uncalibrated bool `json:"uncalibrated,omitempty"`
	// Knockout is how a row of more than 16 options was decided (its passes, and the
	// distribution over all its options); the seed fields above are its final pass's, and
	// Probability the chosen option's share of the distribution.
	Knockout *Knockout `json:"knockout,omitempty"`
	// Shortlist is how a row of more than 16 options was decided by shortlist
	// (KnockoutOptions ManyShortlist): every option's ranking score, the options kept, and the
	// distribution over all options; the seed fields above are its final pass's, and
	// Probability the chosen option's share of the distribution.
	Shortlist *Shortlist `json:"shortlist,omitempty"`
	// YesNo is a noul question's yes/no readout (Decider.Ask; prompt_version noul-v1): its
	// p_yes and the yes and no tokens' scores. Chosen is then "true" or "false" (p_yes ≥ 0.5)
	// and Probability the chosen answer's probability.
	YesNo *contract.BinaryScore `json:"yes_no,omitempty"`
	// Suspect is the injection detector's readout of the row's evidence (Options.Detect).
	Suspect *Suspicion `json:"suspect,omitempty"`
	// Abstained: Probability is below Options.AbstainBelow, or the detector flagged the row
	// under Options.AbstainOnSuspect. The choice is kept; a caller hands the row to a person
	// instead of acting on it.
	Abstained bool `json:"abstained,omitempty"`
	// Backend is "in-process" or the server's URL; Renderer "go", "llama" or "server";
	// TemplateDate the clock the template read ("2006-01-02" at midnight, else RFC 3339):
	// rerun with it pinned (Options.Runtime.TemplateTime, jev --template-date) to reproduce
	// prompt_sha256.
	Backend  string `json:"backend"`
	Renderer string `json:"renderer"`
	// Decode is how the in-process runtime decoded the prompts: "one-sequence" (exact: the
	// logits of each prompt decoded alone) or "packed" (several prompts per llama_decode;
	// backend.InProcessOptions.Decode). Empty over HTTP.
	Decode       string `json:"decode,omitempty"`
	TemplateDate string `json:"template_date"`
	// MS is the decision's latency in milliseconds: from the call to the result, queueing,
	// rendering and the shared decodes included.
	MS    float64  `json:"ms"`
	Stats RowStats `json:"stats"`

	embeddings [][]float32 // an embedding job's hidden states, one per prompt (jobEmbed)
}

// RowStats are a row's token and time accounting (Result.Stats; Stats are the Decider's totals).
type RowStats struct {
	// PromptTokens is what deciding the row alone with no reuse decodes: the sum of its
	// prompts' lengths (one prompt under Direct, one per option under Binary, times the
	// permutations under Cyclic).
	PromptTokens int `json:"prompt_tokens"`
	// DecodedTokens is what the runtime decoded for the row: every token decoded is shared
	// equally among the prompts it served, so the sum over rows is the Decider's total.
	DecodedTokens float64 `json:"decoded_tokens"`
	// QueueMS is the time from the request to the first decode of one of its prompts, in ms.
	QueueMS float64 `json:"queue_ms"`
}

// Outcome is one row's Result or error, as DecideAll returns them.
type Outcome struct {
	Result *Result
	Err    error
}

// Debiased is what bias control adds to a Result. The raw fields of the Result (each option's
// logit, logprob and probability from the row's own order) stay as they are; Chosen, Correct
// and Probability then follow the debiased scores, and RawChosen/RawCorrect keep the raw
// choice.
type Debiased struct {
	// Method is debias.PriDe, debias.Cyclic or debias.Contextual.
	Method debias.Method `json:"method"`
	// RawChosen is the option the raw scores choose; RawCorrect compares it with the label.
	RawChosen  string `json:"raw_chosen"`
	RawCorrect *bool  `json:"raw_correct,omitempty"`
	// Scores are the debiased log-probabilities over the options, in row order (direct only);
	// Probabilities their softmax (direct), or each candidate's calibrated p_yes (binary).
	Scores        []float64 `json:"scores,omitempty"`
	Probabilities []float64 `json:"probabilities"`
	// Prior is the letter prior PriDe divided out, by letter (A first), as estimated or read
	// from a prior file.
	Prior []float64 `json:"prior,omitempty"`
	// PriorSample marks a PriDe row of the estimation sample: it was decided under all k
	// cyclic permutations, and its scores are their average (as the paper scores its sample).
	PriorSample bool `json:"prior_sample,omitempty"`
	// Permutations are the shifted prompts of a cyclic decision (shift 0, the row's own
	// order, is the Result's own prompt and not repeated here).
	Permutations []Permutation `json:"permutations,omitempty"`
	// ContentFree is contextual calibration's mean p_yes per candidate over the content-free
	// evidence (debias.ContentFreeEvidence), in row order.
	ContentFree []float64 `json:"content_free_p_yes,omitempty"`
	// Reading is how a score's rubric was read: ReadBothOrders (its levels listed and
	// reversed, Permutations holding the reversed read; Method the bias control each read got
	// first); "" for any other row.
	Reading ScoreReading `json:"reading,omitempty"`
	// ContentFreeLevels is, for a score read in both orders, its rubric's content-free level
	// distribution (contextual calibration of its levels: the mean over the content-free
	// evidence of the combined reads, in level order), divided out of Scores.
	ContentFreeLevels []float64 `json:"content_free_levels,omitempty"`
}

// Permutation is one cyclically shifted prompt of a row: position i (letter Letters[i]) showed
// the row's option (i+Shift) mod k; or, Reversed, its options in reverse order.
type Permutation struct {
	Shift int `json:"shift"`
	// Reversed: the prompt listed the options in reverse order (position i showed option
	// k−1−i; Shift 0), a score's rubric read highest first (Debiased.Reading).
	Reversed      bool   `json:"reversed,omitempty"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	// Logprobs are the log-probabilities over the listed options by position (letter), as
	// this prompt gave them.
	Logprobs []float64 `json:"logprobs"`
}

// Calibration is what a calibration profile (Options.Calibration) added to a Result. The
// Result's Probability is then the calibrated probability of its choice; the raw fields, the
// bias-control fields and Chosen stay as they were.
type Calibration struct {
	// Scoring is the scoring the row's scores came from (Options.Scoring), Method the map the
	// profile chose for it, K the option count the map was fitted for (0: fitted on every
	// row), Params the map's parameters, ProfileSHA256 the profile file's sha256.
	Scoring       string           `json:"scoring"`
	Method        calibrate.Method `json:"method"`
	K             int              `json:"k"`
	Params        calibrate.Map    `json:"params"`
	ProfileSHA256 string           `json:"profile_sha256"`
	// UncalibratedProbability is the Probability the Result had before calibration.
	UncalibratedProbability float64 `json:"uncalibrated_probability"`
	// Probabilities are the calibrated probabilities in row order: direct, a distribution over
	// the options (under a top-label map the chosen option's is calibrated and the others
	// share the rest in proportion); binary, each candidate's calibrated p_yes.
	Probabilities []float64 `json:"probabilities"`
}

// Knockout is how a row of more than 16 options was decided (Result.Knockout).
type Knockout struct {
	// Grouping and Seed are the KnockoutOptions in force; Keep how many options of each
	// group survived; Scoring the passes' scoring (raw, pride, permute-N, cyclic).
	Grouping string `json:"grouping"`
	Seed     uint64 `json:"seed"`
	Keep     int    `json:"keep"`
	Scoring  string `json:"scoring"`
	// Rule is how the passes chose: knockout.RuleLeastSquares; empty in records of builds
	// that chose by the final pass alone (RecombineKnockout re-reads those).
	Rule string `json:"rule,omitempty"`
	// Passes are the group passes in plan order, then the final pass.
	Passes []Pass `json:"passes"`
	// Distribution is one probability per option of the row, in row order, summing to 1:
	// the passes combined under Luce's choice axiom (knockout.Combine: the least-squares
	// log-weights of every pass's log-probabilities, each pass with its own normaliser).
	// Options eliminated in a group get their probability from their ratio to that group's
	// survivors; a survivor's is the mean of its group's and the final pass's readings. The
	// row's choice (Result.Chosen) is its argmax, always a survivor; the final pass's own
	// choice is Passes[len(Passes)-1].Chosen.
	Distribution []OptionProbability `json:"distribution"`
}

// Pass is one prompt-level decision of a knockout: a group of the row's options, or the final
// pass over the survivors.
type Pass struct {
	Final bool `json:"final,omitempty"`
	// Options are the pass's option ids, in the order its prompt lists them (the row's).
	Options       []string `json:"options"`
	PromptSHA256  string   `json:"prompt_sha256"`
	NPromptTokens int      `json:"n_prompt_tokens"`
	// Logprobs are the pass's log-probabilities over its options (the debiased ones under
	// bias control), normalised over the pass.
	Logprobs []float64 `json:"logprobs"`
	// Chosen is the pass's own choice; Survivors the options it sends to the final pass.
	Chosen    string   `json:"chosen"`
	Survivors []string `json:"survivors,omitempty"`
	// Permutations are the shifted prompts of a pass under --permute or cyclic.
	Permutations []Permutation `json:"permutations,omitempty"`
}

// OptionProbability is one option's probability in a knockout's distribution.
type OptionProbability struct {
	ID          string  `json:"id"`
	Probability float64 `json:"probability"`
}

// Suspicion is the injection detector's readout of one row's evidence (Options.Detect): its
// own prompt (contract.DetectMessages, prompt_version injection-check-v1), read as the binary
// contract reads an answer (p_yes over every single-token spelling of yes and no).
type Suspicion struct {
	PromptVersion string `json:"prompt_version"`
	PromptSHA256  string `json:"prompt_sha256"`
	NPromptTokens int    `json:"n_prompt_tokens"`
	contract.BinaryScore
	// Threshold is the p_yes at or above which the row is Flagged; Abstain is set when a
	// flagged row abstains (Options.AbstainOnSuspect).
	Threshold float64 `json:"threshold"`
	Flagged   bool    `json:"flagged"`
	Abstain   bool    `json:"abstain,omitempty"`
}

// Prompt is one rendered, checked and tokenized prompt.
type Prompt struct {
	Text    string  // the prompt text the model reads
	SHA256  string  // contract.PromptSHA256(Text): the prompt_sha256 results carry
	Tokens  []int32 // its tokens (add_special=false, parse_special=true)
	NTokens int     // len(Tokens)
	ids     []int32 // the answer tokens read at its last position
}
