// Package debias controls the position bias of a decision's scores and calibrates them, without
// changing a prompt: every method reads the log-probabilities that the contract's own prompts
// give, possibly for several orderings of the same options, and adds scores beside the raw ones.
//
// Three methods, each from its paper:
//
//   - PriDe (Zheng et al., "Large Language Models Are Not Robust Multiple Choice Selectors",
//     ICLR 2024; reference code chujiezheng/LLM-MCQ-Bias, debias_utils.py and debias_pride.py).
//     The model's prior over answer letters is estimated, without labels, from a few rows each
//     decided under all k cyclic permutations of its options (EstimateRowPrior, then
//     AveragePriors), and every other row is scored from one decode as
//     log p(letter) − log prior(letter) (ApplyPrior).
//   - Cyclic permutation averaging (the "cyclic" permutation set of the same paper): a row is
//     decided under all k cyclic permutations and each option's log-probability is averaged
//     over the k positions it took (AverageCyclic). k× the cost; the letter prior cancels.
//   - Contextual calibration (Zhao et al., "Calibrate Before Use: Improving Few-Shot
//     Performance of Language Models", ICML 2021) for the binary contract's yes/no readout: the
//     probability of "yes" given content-free evidence ("N/A", "", "[MASK]") is averaged and
//     divided out (Calibrate).
//
// Log-probabilities here are over the listed options (a log-softmax of the option logits, as
// the contract's "probability" field is their softmax), indexed by position: element i belongs
// to letter Letters[i] of the prompt it was read from.
package debias

import (
	"errors"
	"fmt"
	"math"
)

// Method names a bias-control method, as jev's --debias and --permute flags and every
// record's debias.method spell it.
type Method string

const (
	// Default is the zero Method, the measured best at about the raw cost: PriDe under the
	// direct contracts wherever a prior for the row's option count is at hand (given, read
	// from a calibration profile, estimated from the run's own sample, or stored: Store),
	// else the raw scores; the raw scores under the binary contract. A row decided without a
	// prior says so by carrying no debias record.
	Default Method = ""
	// None decides from one prompt and reports the raw scores only (jev's --debias none).
	None Method = "none"
	// PriDe debiases one decode per row with an estimated letter prior (Zheng et al. 2024).
	PriDe Method = "pride"
	// Cyclic averages each option's log-probability over all k cyclic permutations.
	Cyclic Method = "cyclic"
	// Contextual is contextual calibration of the binary contract's p_yes (Zhao et al. 2021).
	Contextual Method = "contextual"
)

// ErrShape reports inputs whose lengths disagree (k permutations of k options, a prior of k
// letters).
var ErrShape = errors.New("debias: shapes do not match")

// CyclicOrder returns the option order of cyclic permutation shift of k options: the option at
// position i (letter Letters[i]) is the row's option (i+shift) mod k. Shift 0 is the row's own
// order. It panics unless 0 ≤ shift < k.
func CyclicOrder(k, shift int) []int {
	if shift < 0 || shift >= k {
		panic(fmt.Sprintf("debias: shift %d of %d options", shift, k))
	}
	order := make([]int, k)
	for i := range order {
		order[i] = (i + shift) % k
	}
	return order
}

// Permute returns the options in the order of CyclicOrder(len(options), shift).
func Permute[T any](options []T, shift int) []T {
	out := make([]T, len(options))
	for i, o := range CyclicOrder(len(options), shift) {
		out[i] = options[o]
	}
	return out
}

// LogSoftmax returns x_i − log Σ_j exp(x_j) (stable in float64): log-probabilities over the
// listed options from their logits or full-vocabulary log-probabilities (the shift cancels).
func LogSoftmax(x []float64) []float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = max(m, v)
	}
	total := 0.0
	for _, v := range x {
		total += math.Exp(v - m)
	}
	lse := m + math.Log(total)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v - lse
	}
	return out
}

// Softmax returns exp(LogSoftmax(x)).
func Softmax(x []float64) []float64 {
	out := LogSoftmax(x)
	for i, v := range out {
		out[i] = math.Exp(v)
	}
	return out
}

// EstimateRowPrior is PriDe's prior from one row decided under all k cyclic permutations
// (debias_utils.simple): perms[s][i] is the log-probability (over the listed options) of
// position i under shift s; the prior over positions is softmax_i(mean_s perms[s][i]). Content
// moves round the positions while the letters stay, so the mean over shifts keeps what the
// model gives a letter whatever it holds. Errors: ErrShape unless perms is k×k, k ≥ 1.
func EstimateRowPrior(perms [][]float64) ([]float64, error) {
	k := len(perms)
	if k == 0 {
		return nil, fmt.Errorf("%w: no permutations", ErrShape)
	}
	mean := make([]float64, k)
	for s, row := range perms {
		if len(row) != k {
			return nil, fmt.Errorf("%w: permutation %d has %d positions, want %d", ErrShape, s, len(row), k)
		}
		for i, v := range row {
			mean[i] += v / float64(k)
		}
	}
	return Softmax(mean), nil
}

// AveragePriors is PriDe's prior over the sample: the mean of the rows' priors
// (debias_pride.py: np.mean(all_priors, axis=0)), renormalised against rounding. Errors:
// ErrShape for no priors or priors of different lengths.
func AveragePriors(priors [][]float64) ([]float64, error) {
	if len(priors) == 0 {
		return nil, fmt.Errorf("%w: no rows to average", ErrShape)
	}
	k := len(priors[0])
	out := make([]float64, k)
	for r, p := range priors {
		if len(p) != k {
			return nil, fmt.Errorf("%w: row %d's prior has %d letters, want %d", ErrShape, r, len(p), k)
		}
		for i, v := range p {
			out[i] += v
		}
	}
	total := 0.0
	for _, v := range out {
		total += v
	}
	for i := range out {
		out[i] /= total
	}
	return out, nil
}

// ApplyPrior is PriDe's debiased score of one decode (debias_pride.py): score_i =
// logp_i − log prior_i for the log-probabilities logp over the listed options in prompt order.
// It returns the scores renormalised as log-probabilities (a constant shift, so the argmax is
// PriDe's) and their softmax. Errors: ErrShape when the lengths differ; a prior entry ≤ 0
// gives an error too (no letter can have prior 0 after a softmax).
func ApplyPrior(logp, prior []float64) (scores, probs []float64, err error) {
	if len(logp) != len(prior) {
		return nil, nil, fmt.Errorf("%w: %d options, a prior of %d letters", ErrShape, len(logp), len(prior))
	}
	raw := make([]float64, len(logp))
	for i := range logp {
		if !(prior[i] > 0) {
			return nil, nil, fmt.Errorf("%w: prior of letter %d is %v", ErrShape, i, prior[i])
		}
		raw[i] = logp[i] - math.Log(prior[i])
	}
	scores = LogSoftmax(raw)
	probs = make([]float64, len(scores))
	for i, v := range scores {
		probs[i] = math.Exp(v)
	}
	return scores, probs, nil
}

// AverageCyclic is permutation averaging over the k cyclic permutations: perms[s] holds the
// log-probabilities by position under shift s (position i shows option (i+s) mod k), and the
// result gives each option, in the row's own order, its mean log-probability over the k
// positions it held, renormalised (LogSoftmax), with the softmax. Under PriDe's model
// (observed ∝ prior(letter) × content) every option meets every letter once, so the prior
// cancels exactly in a mean of log-probabilities (the reference code averages probabilities;
// the choice is the same up to that smoothing). Errors: ErrShape unless perms is k×k.
func AverageCyclic(perms [][]float64) (scores, probs []float64, err error) {
	for s, row := range perms {
		if len(row) != len(perms) {
			return nil, nil, fmt.Errorf("%w: permutation %d has %d positions, want %d", ErrShape, s, len(row), len(perms))
		}
	}
	return AverageShifts(perms, Shifts(len(perms), 0))
}

// Shifts are the cyclic shifts of k options a row is decided under when n of them are asked
// for: n evenly spaced shifts ⌊j·k/n⌋, j = 0 … n−1, starting with the row's own order (0); all
// k (0, 1, …, k−1) when n is 0 or at least k.
func Shifts(k, n int) []int {
	if n <= 0 || n > k {
		n = k
	}
	out := make([]int, n)
	for j := range out {
		out[j] = j * k / n
	}
	return out
}

// AverageShifts is permutation averaging over some cyclic shifts: perms[j] holds the
// log-probabilities by position under shift shifts[j], and each option gets its mean
// log-probability over the positions it held, renormalised (LogSoftmax), with the softmax.
// With all k shifts it is AverageCyclic; with fewer the letter prior no longer cancels exactly,
// so a caller holding PriDe's prior divides it out of each permutation first (ApplyPrior).
// Errors: ErrShape unless every permutation has k positions and each shift lies in [0, k).
func AverageShifts(perms [][]float64, shifts []int) (scores, probs []float64, err error) {
	if len(perms) == 0 || len(perms) != len(shifts) {
		return nil, nil, fmt.Errorf("%w: %d permutations for %d shifts", ErrShape, len(perms), len(shifts))
	}
	k := len(perms[0])
	mean := make([]float64, k)
	for j, row := range perms {
		if len(row) != k || shifts[j] < 0 || shifts[j] >= k {
			return nil, nil, fmt.Errorf("%w: permutation %d has %d positions and shift %d, want %d positions", ErrShape, j, len(row), shifts[j], k)
		}
		for i, v := range row {
			mean[(i+shifts[j])%k] += v / float64(len(perms))
		}
	}
	scores = LogSoftmax(mean)
	probs = make([]float64, k)
	for i, v := range scores {
		probs[i] = math.Exp(v)
	}
	return scores, probs, nil
}

// ContentFreeEvidence are the content-free inputs of contextual calibration (Zhao et al.
// 2021, section 5: "N/A", the empty string and "[MASK]"), used as a row's state: the binary
// prompt then reads the JSON string "N/A" (and so on) as its evidence.
var ContentFreeEvidence = []string{"N/A", "", "[MASK]"}

// Calibrate is contextual calibration of a yes/no probability: with p̂ the mean p_yes over the
// content-free inputs, W = diag([p̂, 1−p̂])⁻¹ and the calibrated distribution is
// softmax(W·[p, 1−p]) normalised, i.e. q = (p/p̂) / (p/p̂ + (1−p)/(1−p̂)) (the paper's
// equation with b = 0). pCF are the content-free p_yes values. A p̂ of exactly 0 or 1 cannot
// be divided out; Calibrate then returns p unchanged and false.
func Calibrate(p float64, pCF []float64) (q float64, ok bool) {
	if len(pCF) == 0 {
		return p, false
	}
	mean := 0.0
	for _, v := range pCF {
		mean += v / float64(len(pCF))
	}
	if !(mean > 0 && mean < 1) {
		return p, false
	}
	yes, no := p/mean, (1-p)/(1-mean)
	return yes / (yes + no), true
}
