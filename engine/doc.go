// Package engine decides many rows at once with one loaded model, decoding every token that
// several prompts share only once, and safe to call from many goroutines.
//
//	e, err := engine.Open("model.gguf", engine.Options{Contract: engine.Binary})
//	...
//	defer e.Close()
//	res, err := e.Decide(ctx, row)          // from any number of goroutines
//	outs, err := e.DecideAll(ctx, rows)     // results in input order
//
// # Contracts
//
// Direct (direct-options-v1) renders one prompt per row and reads the letter logits A..P at
// its last position, exactly as package decide does. Binary (binary-candidates-v1) renders one
// prompt per option (contract.BinaryMessages), reads the yes/no logits at each prompt's last
// position and ranks the candidates by p_yes (contract.ScoreBinary, contract.RankCandidates).
//
// # Bias control
//
// Options.Debias adds scores beside the raw ones without changing a prompt (package debias):
// PriDe divides an estimated letter prior out of one decode per row (EstimatePrior, SetPrior,
// or Options.Prior from a saved file); Cyclic decides a row under all k cyclic permutations of
// its options, as k jobs that the scheduler decodes together, so their common prefix (system
// prompt, evidence, criterion) is decoded once; Contextual calibrates the binary contract's
// p_yes against content-free evidence, cached per question and candidate. Result.Debias
// records the method, the raw choice, the prior, and every permuted prompt's prompt_sha256.
//
// # Scheduling and prefix reuse
//
// One scheduler goroutine owns the llama context. It takes every prompt waiting (a round) and
// decodes them in lexicographic order of their tokens, one at a time in sequence 0, each after
// cutting the KV cache back to the longest prefix it shares with the prompt before it
// (llama_memory_seq_rm). In that order each node of the round's token trie is decoded exactly
// once: the system prompt and the template's head once per round, a binary row's prompt up to
// the candidate once for all its candidates, the evidence once for several questions about the
// same state. Stats counts the tokens a no-reuse run would decode and those decoded.
//
// # Why one sequence, not packed batches
//
// Packing several prompts into one llama_decode as separate sequences (n_seq_max > 1,
// llama_memory_seq_cp of a shared prefix) was built and measured first. On the CPU backend it
// changes the numbers: with the prompts' cells interleaved in a unified KV cache the attention
// sums run in another order, and on SmolLM2-135M some options' log-probabilities moved by up to
// 0.21 against deciding each prompt alone, although cells were aligned mod 32 and no batch held
// one token; the contract's bound is 1e-4. With one sequence a prompt's cells are its positions,
// exactly as when it is decoded alone, and the result is bit-identical to package decide's
// (tested on real rows). On two CPU cores packing also gains little: prompt processing is
// compute-bound and a 100-token batch already keeps both cores busy; what saves time is not
// decoding shared tokens twice, which one sequence in trie order already achieves.
//
// No decode submits a one-token batch: llama.cpp's CPU backend computes a single token through
// a different matrix-vector path (logits differ by up to 0.35), so at least the last two tokens
// of a prompt are always decoded, in near-equal chunks of at most n_batch.
package engine
