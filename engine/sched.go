package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gojev/gojev/llama"
)

// scheduler is the state the scheduler goroutine owns: the prompts waiting and what the KV
// cache holds between rounds.
type scheduler struct {
	e       *Engine
	pending []*prompt
	root    []llama.Token // tokens resident in sequence 0 (positions 0..len-1)
	scratch int           // seq id of the pad sequence
	maxSeqs int           // prompts per round
	pad     llama.Token   // the token a one-token chunk is padded with
	dirty   []int         // worker sequences to empty after the round
	cell    int           // the next free KV cell in this round (every cell below is in use)
	padPos  int           // the next position in the scratch sequence
}

func (s *scheduler) init(e *Engine) {
	s.e = e
	s.scratch = e.opts.NSeqMax - 1
	s.maxSeqs = e.opts.NSeqMax - roundReservedSeqs
	s.pad = max(0, e.model.Vocab().BOS())
}

// loop is the scheduler goroutine: it gathers queued jobs, runs rounds until nothing waits,
// and fails what is left when the Engine closes.
func (e *Engine) loop() {
	s := &e.sched
	defer close(e.stopped)
	for {
		if len(s.pending) == 0 {
			select {
			case j := <-e.submit:
				s.add(j)
			case <-e.quit:
				s.failAll(fmt.Errorf("engine: %w", llama.ErrClosed))
				return
			}
		}
	drain:
		for {
			select {
			case j := <-e.submit:
				s.add(j)
			default:
				break drain
			}
		}
		select {
		case <-e.quit:
			s.failAll(fmt.Errorf("engine: %w", llama.ErrClosed))
			return
		default:
		}
		if round, p := s.admit(); len(round) > 0 {
			s.run(round, p)
		}
	}
}

func (s *scheduler) add(j *job) { s.pending = append(s.pending, j.prompts...) }

func (s *scheduler) finish(j *job, res *Result, err error) {
	if j.finished {
		return
	}
	j.finished, j.res, j.err = true, res, err
	for _, p := range j.prompts {
		p.logits = nil
	}
	close(j.done)
}

func (s *scheduler) failAll(err error) {
	for _, p := range s.pending {
		s.finish(p.job, nil, err)
	}
	s.pending = nil
	for {
		select {
		case j := <-s.e.submit:
			s.finish(j, nil, err)
		default:
			return
		}
	}
}

// admit takes the next round's prompts from the queue: at most maxSeqs, skipping those of
// cancelled or failed jobs, and no more than the KV cache holds (the trie's cells plus a
// scratch pad must fit n_ctx; one prompt always fits, Prompts checked its length).
func (s *scheduler) admit() ([]*prompt, *plan) {
	var round []*prompt
	i := 0
	for ; i < len(s.pending) && len(round) < s.maxSeqs; i++ {
		p := s.pending[i]
		if p.job.finished {
			continue
		}
		if err := p.job.ctx.Err(); err != nil {
			s.finish(p.job, nil, fmt.Errorf("engine: %w", err))
			continue
		}
		round = append(round, p)
	}
	rest := s.pending[i:]
	if len(round) == 0 {
		s.pending = rest
		return nil, nil
	}
	for {
		pl := buildPlan(round)
		if pl.cells+cellAlign*pl.nodes+1 <= s.e.opts.NCtx || len(round) == 1 {
			s.pending = rest
			return round, pl
		}
		rest = append([]*prompt{round[len(round)-1]}, rest...)
		round = round[:len(round)-1]
	}
}

// run decodes one round and completes the jobs whose prompts all have logits. A decode that
// finds no KV slot (fragmentation) is retried once on an emptied cache.
func (s *scheduler) run(round []*prompt, pl *plan) {
	e := s.e
	e.stats.rounds.Add(1)
	now := time.Now()
	jobs := roundJobs(round)
	for _, j := range jobs {
		if j.queued.IsZero() {
			j.queued = now
		}
	}
	ctx, cancel := s.roundContext(jobs)
	defer cancel()
	err := s.execute(ctx, pl)
	if errors.Is(err, llama.ErrNoKVSlot) {
		s.reset()
		err = s.execute(ctx, buildPlan(round))
	}
	if err != nil {
		s.reset()
		for _, j := range jobs {
			if cerr := j.ctx.Err(); cerr != nil {
				s.finish(j, nil, fmt.Errorf("engine: %w", cerr))
			} else {
				s.finish(j, nil, fmt.Errorf("engine: decoding row %s: %w", j.row.IDJSON(), err))
			}
		}
		return
	}
	for _, p := range round {
		j := p.job
		j.left--
		if j.left == 0 && !j.finished {
			if cerr := j.ctx.Err(); cerr != nil {
				s.finish(j, nil, fmt.Errorf("engine: %w", cerr))
				continue
			}
			res, err := e.score(j)
			s.finish(j, res, err)
		}
	}
}

func roundJobs(round []*prompt) []*job {
	var jobs []*job
	for _, p := range round {
		if len(jobs) == 0 || jobs[len(jobs)-1] != p.job {
			if !slices.Contains(jobs, p.job) {
				jobs = append(jobs, p.job)
			}
		}
	}
	return jobs
}

// roundContext is cancelled when every job of the round is cancelled or the Engine closes:
// the decode in flight then aborts (llama_set_abort_callback) instead of finishing work
// nobody waits for.
func (s *scheduler) roundContext(jobs []*job) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.e.base)
	var alive atomic.Int64
	alive.Store(int64(len(jobs)))
	stops := make([]func() bool, 0, len(jobs))
	for _, j := range jobs {
		stops = append(stops, context.AfterFunc(j.ctx, func() {
			if alive.Add(-1) == 0 {
				cancel()
			}
		}))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// reset empties the KV cache after a failed round (llama_memory_clear): a decode that failed
// or aborted may have left part of its batch in the cache.
func (s *scheduler) reset() {
	_ = s.e.lctx.MemoryClear()
	s.root = nil
	s.dirty = s.dirty[:0]
}

// execute decodes a plan level by level: the root's new tokens into sequence 0, then for each
// trie depth the copies of parent sequences (llama_memory_seq_cp) and one decode of all that
// depth's segments, logits flagged at prompts' last tokens.
func (s *scheduler) execute(ctx context.Context, pl *plan) error {
	e := s.e
	root := pl.root
	keep := min(commonPrefix(s.root, root.tokens[:root.end]), root.end)
	if keep < len(s.root) {
		if ok, err := e.lctx.SeqRm(0, keep, -1); err != nil || !ok {
			if err := e.lctx.MemoryClear(); err != nil {
				return err
			}
			keep = 0
		}
		s.root = s.root[:keep]
	}
	root.start = keep
	s.cell, s.padPos = keep, 0
	s.dirty = append(s.dirty, s.scratch)
	defer func() {
		for _, seq := range s.dirty {
			_, _ = e.lctx.SeqRm(seq, -1, -1)
		}
		s.dirty = s.dirty[:0]
	}()
	for depth, level := range pl.levels() {
		if depth > 0 {
			for _, n := range level {
				if n.seq != n.parent.seq {
					if err := e.lctx.SeqCp(n.parent.seq, n.seq, -1, -1); err != nil {
						return err
					}
					s.dirty = append(s.dirty, n.seq)
				}
			}
		}
		if err := s.decodeLevel(ctx, level); err != nil {
			return err
		}
		if depth == 0 {
			s.root = slices.Clone(root.tokens[:root.end])
		}
		for _, n := range level {
			n.attribute(float64(n.end-n.start) / float64(n.members))
		}
	}
	return nil
}

type entry struct {
	n   *node // nil for a pad token
	pos int
}

// cellAlign is the alignment, in KV cells, that keeps batched decoding bit-identical to
// decoding one prompt alone. Without flash attention llama.cpp multiplies the attention
// weights by V^T with a dot product over the KV cells (ggml_vec_dot_f16, or llamafile's
// tinyBLAS), whose SIMD lanes and accumulators take cell i into lane i mod 32 (AVX2: 4
// accumulators of 8). Decoded alone, a prompt's token at position p sits in cell p; here it
// sits in a cell ≡ p (mod cellAlign), cells increasing with p, and the other sequences' cells
// between contribute exact zeros (masked), so every lane sums the same terms in the same order.
// Measured on SmolLM2-135M: without the alignment a logit moves by up to 0.14.
const cellAlign = 32

// decodeLevel decodes the segments of one trie level: one llama_decode per segment, or all
// in one (Options.PackPrompts), in near-equal chunks of at most n_batch tokens. Before each
// segment, pad tokens in the scratch sequence fill the cells up to
// the next cell ≡ the segment's first position (mod cellAlign); llama.cpp places a batch's
// tokens in the first free cells from its head, in batch order, and no cell is freed during a
// round, so s.cell predicts every placement. A level of one token gets one more pad, so no
// llama_decode sees a one-token batch (a different matrix-vector path).
//
// Measured: a sequence whose tail is decoded in the same llama_decode after another
// sequence's tail can still differ (up to ~0.2 in a log-probability) although its cells are
// aligned; the cause is not found yet, hence PackPrompts is opt-in.
func (s *scheduler) decodeLevel(ctx context.Context, level []*node) error {
	var groups [][]entry
	for _, n := range level {
		if n.start == n.end {
			continue
		}
		var entries []entry
		gap := ((n.start-s.cell)%cellAlign + cellAlign) % cellAlign
		for range gap {
			entries = append(entries, entry{nil, 0})
		}
		s.cell += gap + n.end - n.start
		for pos := n.start; pos < n.end; pos++ {
			entries = append(entries, entry{n, pos})
		}
		if s.e.opts.PackPrompts && len(groups) > 0 {
			groups[0] = append(groups[0], entries...)
		} else {
			groups = append(groups, entries)
		}
	}
	for _, entries := range groups {
		if len(entries) == 1 {
			entries = append(entries, entry{nil, 0})
			s.cell++
		}
		if err := s.decodeEntries(ctx, entries); err != nil {
			return err
		}
	}
	return nil
}

func (s *scheduler) decodeEntries(ctx context.Context, entries []entry) error {
	e := s.e
	for _, span := range chunks(len(entries), e.opts.NBatch) {
		e.batch.Clear()
		type out struct {
			row int
			n   *node
		}
		var outs []out
		real := 0
		for _, en := range entries[span[0]:span[1]] {
			if en.n == nil {
				if _, err := e.batch.Add(s.pad, s.padPos, []int{s.scratch}, false); err != nil {
					return err
				}
				s.padPos++
				continue
			}
			real++
			last := en.pos == en.n.end-1 && len(en.n.outs) > 0
			row, err := e.batch.Add(en.n.tokens[en.pos], en.pos, []int{en.n.seq}, last)
			if err != nil {
				return err
			}
			if last {
				outs = append(outs, out{row, en.n})
			}
		}
		e.stats.decodes.Add(1)
		if err := e.lctx.Decode(ctx, e.batch); err != nil {
			return err
		}
		e.stats.decodedTokens.Add(int64(real))
		e.stats.padTokens.Add(int64(span[1] - span[0] - real))
		for _, o := range outs {
			logits, err := e.lctx.Logits(o.row)
			if err != nil {
				return err
			}
			for _, p := range o.n.outs {
				p.logits = logits
			}
		}
	}
	return nil
}

// plan is one round's token trie.
type plan struct {
	root  *node
	cells int // KV cells the round's tokens occupy: the root's plus every other node's segment
	nodes int // nodes below the root (each may need up to cellAlign-1 pad cells before it)
}

// node is a trie node: positions [start, end) of tokens, decoded into sequence seq. Every
// prompt below it has these tokens at these positions; outs are the prompts that end at end.
type node struct {
	tokens     []llama.Token // one member prompt's tokens (segments index it)
	start, end int
	seq        int
	parent     *node
	children   []*node
	outs       []*prompt
	members    int // prompts ending at or below this node
	depth      int
}

// attribute shares a node's decoded tokens among the jobs of the prompts below it.
func (n *node) attribute(perPrompt float64) {
	if perPrompt == 0 {
		return
	}
	for _, p := range n.outs {
		p.job.decoded += perPrompt
	}
	for _, c := range n.children {
		c.attribute(perPrompt)
	}
}

// buildPlan builds the trie of a round's prompts. The root is their longest common prefix,
// stopping two tokens before the shortest prompt ends (so each prompt decodes at least its
// last two tokens in its own sequence, as decide does); below it, prompts are grouped by
// their next token and each group's common prefix is a node. Sequences: the root is seq 0;
// a node reuses its parent's sequence for its first child (copies happen before the child
// decodes) and takes fresh ones, 1.., for the others and for the root's children.
func buildPlan(prompts []*prompt) *plan {
	minLen := prompts[0].NTokens
	for _, p := range prompts {
		minLen = min(minLen, p.NTokens)
	}
	rootEnd := max(0, min(lcp(prompts, 0), minLen-2))
	root := &node{tokens: prompts[0].Tokens, start: 0, end: rootEnd, seq: 0, members: len(prompts)}
	pl := &plan{root: root, cells: rootEnd}
	next := 1
	root.children = split(prompts, rootEnd, root, &pl.cells, &pl.nodes)
	var assign func(n *node)
	assign = func(n *node) {
		for i, c := range n.children {
			if i == 0 && n != root {
				c.seq = n.seq
			} else {
				c.seq = next
				next++
			}
			assign(c)
		}
	}
	assign(root)
	return pl
}

// split groups prompts (all with more than start tokens) by their token at start, in order
// of first appearance, and makes one node per group.
func split(prompts []*prompt, start int, parent *node, cells, count *int) []*node {
	var groups [][]*prompt
	index := map[llama.Token]int{}
	for _, p := range prompts {
		t := p.Tokens[start]
		k, ok := index[t]
		if !ok {
			k = len(groups)
			index[t] = k
			groups = append(groups, nil)
		}
		groups[k] = append(groups[k], p)
	}
	nodes := make([]*node, len(groups))
	for i, g := range groups {
		end := lcp(g, start)
		n := &node{tokens: g[0].Tokens, start: start, end: end, parent: parent, members: len(g), depth: parent.depth + 1}
		*cells += end - start
		*count++
		var longer []*prompt
		for _, p := range g {
			if p.NTokens == end {
				n.outs = append(n.outs, p)
			} else {
				longer = append(longer, p)
			}
		}
		if len(longer) > 0 {
			n.children = split(longer, end, n, cells, count)
		}
		nodes[i] = n
	}
	return nodes
}

// lcp returns the end of the prompts' common token prefix, scanning from start.
func lcp(prompts []*prompt, start int) int {
	end := start
	first := prompts[0].Tokens
	for {
		if end >= len(first) {
			return end
		}
		t := first[end]
		for _, p := range prompts[1:] {
			if end >= len(p.Tokens) || p.Tokens[end] != t {
				return end
			}
		}
		end++
	}
}

// levels lists the plan's nodes by depth (level 0 is the root).
func (pl *plan) levels() [][]*node {
	var out [][]*node
	level := []*node{pl.root}
	for len(level) > 0 {
		out = append(out, level)
		var next []*node
		for _, n := range level {
			next = append(next, n.children...)
		}
		level = next
	}
	return out
}

func commonPrefix(a, b []llama.Token) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// chunks splits n tokens into [start, end) spans of at most size tokens, of near-equal length
// (decide's rule: equal spans avoid a final one-token batch).
func chunks(n, size int) [][2]int {
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
