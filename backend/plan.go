package backend

import "fmt"

func commonPrefix(a, b []int32) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// Align is the alignment of decode batches: every batch of a prompt but its first starts at a
// position that is a multiple of Align, and a prompt reuses a cached prefix only up to a
// multiple of Align. llama.cpp's CPU backend repacks Q4_K weights (and others) for AVX2 and
// NEON (ggml-cpu/repack.cpp) and then multiplies a batch in groups of 4 rows (gemm), the rows
// past the last full group one by one (gemv), with other rounding: a token's logits would
// depend on where its batch started, so on which prompt was decoded before it (measured on
// Qwen2.5-Coder-1.5B Q4_K_M: up to 0.147 in a log-probability between --window 1 and 32).
// With batches aligned to absolute positions, every token falls in the same group of 4 as
// when its prompt is decoded alone.
const Align = 4

// DecodePlan says how to decode tokens after a cache holding cached: keep is the number of
// cached tokens reused (the common prefix, rounded down to a multiple of Align, leaving at
// least two tokens to decode), and spans are the [start, end) positions of each llama_decode
// batch, at most nBatch tokens each, boundaries at multiples of Align (alignedChunks).
func DecodePlan(cached, tokens []int32, nBatch int) (keep int, spans [][2]int) {
	keep = min(commonPrefix(cached, tokens), len(tokens)-2)
	keep = max(0, keep-keep%Align)
	return keep, alignedChunks(keep, len(tokens), nBatch)
}

// alignedChunks splits positions [start, end) into near-equal batches of at most size tokens
// whose inner boundaries are multiples of Align (start is one, or 0), none of one token when
// end-start ≥ 2. Below 4·Align tokens a batch cannot be both aligned and near-equal; Chunks'
// unaligned split is used then.
func alignedChunks(start, end, size int) [][2]int {
	n := end - start
	if n <= 0 {
		return nil
	}
	if size < 4*Align {
		spans := Chunks(n, size)
		for i := range spans {
			spans[i][0] += start
			spans[i][1] += start
		}
		return spans
	}
	step := size - Align // a boundary rounded down stays within size
	count := (n + step - 1) / step
	spans := make([][2]int, 0, count)
	prev := start
	for k := 1; k < count; k++ {
		b := start + k*n/count
		b -= b % Align
		if b-prev >= 2 && end-b >= 2 {
			spans = append(spans, [2]int{prev, b})
			prev = b
		}
	}
	return append(spans, [2]int{prev, end})
}

// Chunks splits n tokens into [start, end) spans of at most size tokens, of near-equal length.
// Equal spans avoid a final one-token batch: llama.cpp's CPU backend decodes a single token
// through a different matrix-vector path, whose logits differ from the batched path's
// (measured: up to 0.35 in a logit on SmolLM2-135M), while any split into spans of two or more
// tokens gives identical logits.
func Chunks(n, size int) [][2]int {
	if n == 0 {
		return nil
	}
	count := (n + size - 1) / size
	spans := make([][2]int, 0, count)
	for k := range count {
		spans = append(spans, [2]int{k * n / count, (k + 1) * n / count})
	}
	return spans
}

// ErrPromptTooLong: the rendered prompt has more tokens than n_ctx.
var ErrPromptTooLong = fmt.Errorf("backend: prompt longer than n_ctx")

// PromptTooLongError reports a prompt that cannot fit the context: NTokens > NCtx. NCtxTrain
// is the model's training context, the most NCtx can be raised to (0 when unknown).
type PromptTooLongError struct{ NTokens, NCtx, NCtxTrain int }

func (e *PromptTooLongError) Error() string {
	msg := fmt.Sprintf("prompt has %d tokens, more than n_ctx=%d", e.NTokens, e.NCtx)
	switch {
	case e.NCtxTrain > e.NCtx:
		msg += fmt.Sprintf(" (raise n_ctx, jev -c, up to the model's %d)", e.NCtxTrain)
	case e.NCtxTrain > 0:
		msg += " (the model's training context; it cannot take a longer prompt)"
	}
	return msg
}

func (e *PromptTooLongError) Unwrap() error { return ErrPromptTooLong }
