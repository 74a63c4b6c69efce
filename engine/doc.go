// Package engine decides many rows at once with one loaded model: it gathers the prompts of
// concurrent requests into shared llama_decode batches, one sequence (seq_id) per prompt,
// and decodes every token that several prompts share only once.
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
// # Scheduling and prefix reuse
//
// One scheduler goroutine owns the llama context (n_seq_max sequences in one unified KV
// cache, kv_unified=true). It takes the prompts waiting, up to n_seq_max-2 at a time and as
// many as the KV cache holds, and builds the token trie of that round: the prompts' longest
// common token prefix is the root, kept resident in sequence 0 from round to round (the
// system prompt and the template's head stay decoded); every branching point below it is one
// node, decoded once into one sequence and copied into the sequences below it
// (llama_memory_seq_cp of the whole sequence, which in a unified cache only tags cells).
// A binary row is the typical case: the prompt up to the candidate is decoded once, then
// every candidate's suffix is decoded in one batch. Direct rows about the same state share the
// evidence the same way. Each node's segment is one llama_decode (split into near-equal chunks
// of ≤ n_batch tokens when larger) with logits requested only at prompts' last tokens; with
// Options.PackPrompts, all segments of a trie level share one llama_decode, one seq_id each.
//
// No decode ever submits a one-token batch: llama.cpp's CPU backend computes a single token
// through a different matrix-vector path (logits differ by up to 0.35); a level of one token
// is padded with a throwaway token in a scratch sequence (seq_id n_seq_max-1), removed after.
// Each segment's KV cells are aligned (cell ≡ position mod 32) with pad tokens, so the
// attention sums add the same terms in the same SIMD lanes as a prompt decoded alone. With
// flash attention off, the default path is then bit-identical to deciding each prompt alone
// (the tests measure the largest log-probability difference against decide.Decider and a
// one-prompt-at-a-time binary path); PackPrompts is not yet (see Options.PackPrompts).
package engine
