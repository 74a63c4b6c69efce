package llama

/*
#include "gojev.h"
*/
import "C"

import (
	"fmt"
	"math"
	"unsafe"
)

// Batch is a llama_batch made by llama_batch_init: room for Cap tokens, each in up to NSeqMax
// sequences. Fill it with Add, pass it to Context.Decode, Clear it to reuse it, and free it with
// Close (llama_batch_free). A Batch is not safe for concurrent use.
type Batch struct {
	c       C.struct_llama_batch
	cap     int
	nSeqMax int
	closed  bool
}

// NewBatch allocates a batch for capacity tokens with up to nSeqMax seq_ids each
// (llama_batch_init(capacity, 0, nSeqMax)). Both must be positive.
func NewBatch(capacity, nSeqMax int) (*Batch, error) {
	if capacity <= 0 || nSeqMax <= 0 || capacity > math.MaxInt32/2 || nSeqMax > math.MaxInt16 {
		return nil, fmt.Errorf("%w: capacity %d, n_seq_max %d", ErrBatch, capacity, nSeqMax)
	}
	b := &Batch{c: C.llama_batch_init(C.int32_t(capacity), 0, C.int32_t(nSeqMax)), cap: capacity, nSeqMax: nSeqMax}
	liveBatches.Add(1)
	return b, nil
}

// Cap returns the batch's token capacity.
func (b *Batch) Cap() int { return b.cap }

// Len returns the number of tokens added since the last Clear (llama_batch.n_tokens).
func (b *Batch) Len() int { return int(b.c.n_tokens) }

// Clear empties the batch for reuse.
func (b *Batch) Clear() { b.c.n_tokens = 0 }

// Add appends token t at position pos (llama_pos) to the sequences seqIDs (llama_seq_id),
// asking for its logits when logits is true (llama_batch.logits[i] = 1). It returns the token's
// index in the batch, which Context.Logits takes. Errors wrap ErrBatch (full, no seq id, too
// many seq ids, negative pos or seq id) or ErrClosed.
func (b *Batch) Add(t Token, pos int, seqIDs []int, logits bool) (int, error) {
	if b.closed {
		return 0, ErrClosed
	}
	i := int(b.c.n_tokens)
	switch {
	case i >= b.cap:
		return 0, fmt.Errorf("%w: batch is full (%d tokens)", ErrBatch, b.cap)
	case len(seqIDs) == 0 || len(seqIDs) > b.nSeqMax:
		return 0, fmt.Errorf("%w: %d seq ids for a batch of n_seq_max %d", ErrBatch, len(seqIDs), b.nSeqMax)
	case pos < 0 || pos > math.MaxInt32:
		return 0, fmt.Errorf("%w: position %d", ErrBatch, pos)
	}
	tokens := unsafe.Slice(b.c.token, b.cap)
	positions := unsafe.Slice(b.c.pos, b.cap)
	nSeq := unsafe.Slice(b.c.n_seq_id, b.cap)
	seqs := unsafe.Slice(b.c.seq_id, b.cap)
	flags := unsafe.Slice(b.c.logits, b.cap)
	row := unsafe.Slice(seqs[i], b.nSeqMax)
	for k, s := range seqIDs {
		if s < 0 || s > math.MaxInt32 {
			return 0, fmt.Errorf("%w: seq id %d", ErrBatch, s)
		}
		row[k] = C.llama_seq_id(s)
	}
	tokens[i] = C.llama_token(t)
	positions[i] = C.llama_pos(pos)
	nSeq[i] = C.int32_t(len(seqIDs))
	flags[i] = 0
	if logits {
		flags[i] = 1
	}
	b.c.n_tokens++
	return i, nil
}

// entry reads back token i: its id, position, sequences and output flag.
func (b *Batch) entry(i int) (t Token, pos int, seqs []C.llama_seq_id, logits bool) {
	tokens := unsafe.Slice(b.c.token, b.cap)
	positions := unsafe.Slice(b.c.pos, b.cap)
	nSeq := unsafe.Slice(b.c.n_seq_id, b.cap)
	rows := unsafe.Slice(b.c.seq_id, b.cap)
	flags := unsafe.Slice(b.c.logits, b.cap)
	return Token(tokens[i]), int(positions[i]), unsafe.Slice(rows[i], int(nSeq[i])), flags[i] != 0
}

// Close frees the batch (llama_batch_free). It is idempotent.
func (b *Batch) Close() error {
	if !b.closed {
		C.llama_batch_free(b.c)
		b.closed = true
		liveBatches.Add(-1)
	}
	return nil
}
