//go:build cgo

package backend

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/gojev/gojev/llama"
)

// DecodeMode returns the decode mode in force (InProcessOptions.Decode, its default resolved).
func (b *InProcess) DecodeMode() string { return b.opts.Decode }

// PackSeqs returns the most prompts one packed decode takes (1 under DecodeOneSequence).
func (b *InProcess) PackSeqs() int {
	if b.opts.Decode != DecodePacked {
		return 1
	}
	return b.opts.PackSeqs
}

// NextTokens decodes several prompts and reads ids[i] at the last position of prompts[i].
//
// Under DecodePacked the prompts share one llama_decode: their longest common prefix (rounded
// down to a multiple of Align) is decoded once into sequence 0, reusing what sequence 0 already
// holds from the previous call, and copied to sequences 1..n (llama_memory_seq_cp, which only
// tags the cells in the unified KV cache); then every prompt's own suffix goes into the same
// batch as sequence i+1, with logits at its last token, n_batch tokens per llama_decode. The
// suffix sequences are removed afterwards; sequence 0 keeps the prefix. Prompts that do not fit
// n_ctx together are decoded in several groups. A packed batch runs through other kernels than
// a one-sequence one (more rows per matrix multiplication), so the logits are not bit-identical
// to NextToken's: jev bench and the packed tests measure by how much.
//
// Under DecodeOneSequence it calls NextToken for each prompt. Errors are NextToken's; on an
// error no readout is returned and the KV cache is emptied.
func (b *InProcess) NextTokens(ctx context.Context, prompts [][]int32, ids [][]int32) ([]Readout, error) {
	if len(prompts) != len(ids) {
		return nil, fmt.Errorf("%w: %d prompts, %d id lists", ErrOptions, len(prompts), len(ids))
	}
	out := make([]Readout, len(prompts))
	if b.opts.Decode != DecodePacked || len(prompts) == 1 {
		for i := range prompts {
			r, err := b.NextToken(ctx, prompts[i], ids[i])
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	if len(prompts) > b.opts.PackSeqs {
		return nil, fmt.Errorf("%w: %d prompts in one packed decode, more than PackSeqs %d", ErrOptions, len(prompts), b.opts.PackSeqs)
	}
	for _, p := range prompts {
		if err := b.CheckPrompt(p); err != nil {
			return nil, err
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lctx == nil {
		return nil, llama.ErrClosed
	}
	for start := 0; start < len(prompts); {
		room := b.nCtx
		if b.opts.SplitKV {
			room = math.MaxInt // each sequence has its own b.nCtx cells (checkPrompt)
		}
		end, prefix := packGroup(prompts, start, room)
		if b.opts.NoSharedPrefix {
			prefix = 0
		}
		err := b.decodeGroup(ctx, prompts[start:end], ids[start:end], prefix, out[start:end])
		if errors.Is(err, llama.ErrNoKVSlot) && ctx.Err() == nil {
			// A fragmented cache: start from an empty one.
			err = b.decodeGroup(ctx, prompts[start:end], ids[start:end], prefix, out[start:end])
		}
		if err != nil {
			return nil, err
		}
		start = end
	}
	return out, nil
}

// packGroup returns the end of the largest group of prompts from start on that fits nCtx
// cells together (their common prefix once, each suffix once), and that group's prefix length:
// the common prefix rounded down to a multiple of Align, leaving every prompt at least one
// token of its own (the one whose logits are read).
func packGroup(prompts [][]int32, start, nCtx int) (end, prefix int) {
	l := len(prompts[start]) - 1
	l -= l % Align
	end = start + 1
	for end < len(prompts) {
		nl := min(l, commonPrefix(prompts[start], prompts[end]), len(prompts[end])-1)
		nl -= nl % Align
		need := nl // the prefix once, then every suffix
		for _, p := range prompts[start : end+1] {
			need += len(p) - nl
		}
		if need > nCtx {
			break
		}
		l = nl
		end++
	}
	return end, max(l, 0)
}

// decodeGroup is one packed decode of group (b.mu held): the prefix into sequence 0, the
// suffixes as sequences 1..len(group).
func (b *InProcess) decodeGroup(ctx context.Context, group, ids [][]int32, prefix int, out []Readout) (err error) {
	defer func() {
		if err != nil {
			b.cached = b.cached[:0]
			_ = b.lctx.MemoryClear()
		}
	}()
	head := group[0][:prefix]
	keep := commonPrefix(b.cached, head)
	keep -= keep % Align
	if keep, err = b.cutSeq0(keep); err != nil {
		return err
	}
	for _, span := range alignedChunks(keep, prefix, b.nBatch) {
		b.batch.Clear()
		for i := span[0]; i < span[1]; i++ {
			if _, err := b.batch.Add(head[i], i, []int{0}, false); err != nil {
				return err
			}
		}
		if err := b.lctx.Decode(ctx, b.batch); err != nil {
			return err
		}
		b.cached = append(b.cached, head[span[0]:span[1]]...)
	}
	for i := range group {
		if _, err := b.lctx.SeqRm(i+1, -1, -1); err != nil {
			return err
		}
		if prefix > 0 {
			if err := b.lctx.SeqCp(0, i+1, 0, prefix); err != nil {
				return err
			}
		}
	}
	type want struct{ prompt, row int }
	var pending []want
	flush := func() error {
		if b.batch.Len() == 0 {
			return nil
		}
		if err := b.lctx.Decode(ctx, b.batch); err != nil {
			return err
		}
		for _, w := range pending {
			logits, err := b.lctx.Logits(w.row)
			if err != nil {
				return err
			}
			r, err := ReadoutFromLogits(logits, ids[w.prompt])
			if err != nil {
				return err
			}
			r.Decoded = len(group[w.prompt]) - prefix
			out[w.prompt] = r
		}
		pending = pending[:0]
		b.batch.Clear()
		return nil
	}
	b.batch.Clear()
	for i, p := range group {
		for pos := prefix; pos < len(p); pos++ {
			if b.batch.Len() == b.batch.Cap() {
				if err := flush(); err != nil {
					return err
				}
			}
			last := pos == len(p)-1
			row, err := b.batch.Add(p[pos], pos, []int{i + 1}, last)
			if err != nil {
				return err
			}
			if last {
				pending = append(pending, want{i, row})
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	out[0].Decoded += prefix - keep
	for i := range group {
		if _, err := b.lctx.SeqRm(i+1, -1, -1); err != nil {
			return err
		}
	}
	return nil
}
