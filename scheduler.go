package gojev

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
)

// maxRound bounds the prompts one round takes, so a steady stream of requests cannot starve
// the ones already waiting.
const maxRound = 512

// job is one row's prompts in flight under one ordering of its options. The scheduler writes
// its results; the requester reads them after done is closed.
type job struct {
	seq      uint64 // its request's (Decider.next): the scheduler serves lower first
	ctx      context.Context
	row      contract.Row
	prompts  []*prompt
	start    time.Time
	left     int       // prompts without a readout yet (scheduler)
	queued   time.Time // first decode (scheduler)
	decoded  float64   // scheduler
	finished bool      // scheduler
	done     chan struct{}
	res      *Result
	err      error
	kind     jobKind
}

// appendTokens appends the tokens of the job's prompts to all (nil: none).
func (j *job) appendTokens(all [][]int32) [][]int32 {
	if j == nil {
		return all
	}
	for _, p := range j.prompts {
		all = append(all, p.Tokens)
	}
	return all
}

// jobKind is what a job's prompts ask and how the scheduler scores them.
type jobKind uint8

const (
	jobDecision   jobKind = iota // a row's decision prompts under the Decider's contract
	jobDetect                    // the injection detector's prompt: Result.Suspect
	jobNoul                      // a noul question's prompt (noul-v1): Result.YesNo
	jobEmbed                     // texts read for their hidden state (backend.Embedder): the shortlist's ranker
	jobCandidates                // a row's options under binary-candidates-v1 whatever the contract: the shortlist's rerank
)

// prompt is one rendered prompt of a job and, once decoded, its readout.
type prompt struct {
	job *job
	Prompt
	readout backend.Readout
}

// scheduler is the state the scheduler goroutine owns: the prompts waiting.
type scheduler struct {
	d       *Decider
	pending []*prompt
	// oldest is the lowest seq among the jobs submitted since the round in progress began.
	oldest uint64
	// cached is the tokens of the prompt decoded last by a one-prompt-at-a-time runtime, which
	// it keeps in its KV cache (backend.InProcess; a server's prompt cache): the next round
	// starts where it can continue them (order). Nil after a packed decode or an error.
	cached []int32
}

// loop is the scheduler goroutine: it gathers queued jobs, decides them round by round, and
// fails what is left when the Decider closes.
func (d *Decider) loop() {
	s := &d.sched
	defer close(d.stopped)
	closed := fmt.Errorf("gojev: %w", ErrClosed)
	for {
		if len(s.pending) == 0 {
			select {
			case j := <-d.submit:
				s.add(j)
			case <-d.quit:
				s.failAll(closed)
				return
			}
		}
	drain:
		for {
			select {
			case j := <-d.submit:
				s.add(j)
			default:
				break drain
			}
		}
		select {
		case <-d.quit:
			s.failAll(closed)
			return
		default:
		}
		if d.packSeqs > 1 && len(s.pending) < d.packSeqs && d.preparing.Load() > 0 {
			// A packed runtime: rows are still being prepared (DecideAll's, or concurrent
			// Decide calls), and a fuller pack costs little more than this one. Wait for
			// them rather than decode a thin pack.
			select {
			case j := <-d.submit:
				s.add(j)
			case <-d.prepared:
			case <-d.quit:
				s.failAll(closed)
				return
			}
			continue
		}
		// The oldest requests' prompts first: a knockout's final pass or a row submitted
		// late is not left behind newer rows.
		slices.SortStableFunc(s.pending, bySeq)
		n := min(len(s.pending), maxRound)
		round := s.pending[:n:n]
		s.pending = s.pending[n:]
		s.run(round)
	}
}

func (s *scheduler) add(j *job) {
	s.pending = append(s.pending, j.prompts...)
	s.oldest = min(s.oldest, j.seq)
}

// outranked takes the jobs submitted meanwhile and reports whether one of them (since the
// round began) belongs to a request older than seq: a knockout row's final pass, asked once its
// group passes are decoded. The round then stops, so that the next one serves it first.
func (s *scheduler) outranked(seq uint64) bool {
	for {
		select {
		case j := <-s.d.submit:
			s.add(j)
		default:
			return s.oldest < seq
		}
	}
}

func (s *scheduler) finish(j *job, res *Result, err error) {
	if j.finished {
		return
	}
	j.finished, j.res, j.err = true, res, err
	s.d.queued.Add(-int64(j.left)) // its prompts without a readout leave the queue too
	for _, p := range j.prompts {
		p.readout = backend.Readout{}
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
		case j := <-s.d.submit:
			s.finish(j, nil, err)
		default:
			return
		}
	}
}

// run decides one round, in order's order: depth first through the trie of the prompts' tokens,
// so each prompt shares the longest possible prefix with the one before it, and the in-process
// runtime, which keeps the previous prompt in its KV cache and decodes only what follows the
// common prefix, decodes every node of the round's token trie (the shared system prompt and
// template head, a row's evidence shared by its binary candidates or its knockout passes,
// several questions about one state) exactly once. A server with a prompt cache gains the
// same way. A packed runtime (backend.Packer) takes consecutive prompts PackSeqs at a time.
// When a job older than the next prompt's arrives (outranked), the rest of the round goes
// back to the pending prompts, and the next round starts with the older job.
func (s *scheduler) run(round []*prompt) {
	d := s.d
	d.stats.rounds.Add(1)
	s.oldest = math.MaxUint64
	pk, packed := d.rt.(backend.Packer)
	step := 1
	if packed && pk.PackSeqs() > 1 {
		step = pk.PackSeqs()
		s.cached = nil
	}
	order(round, s.cached)
	for i := 0; i < len(round); {
		if i > 0 && s.outranked(round[i].job.seq) {
			s.pending = append(round[i:len(round):len(round)], s.pending...)
			return
		}
		var group []*prompt
		for ; i < len(round) && len(group) < step; i++ {
			if s.live(round[i]) {
				group = append(group, round[i])
			}
		}
		switch {
		case len(group) == 0:
		case step == 1:
			s.decodeOne(group[0])
		default:
			s.decodePacked(pk, group)
		}
	}
}

// order sorts a round's prompts into the order they are decoded: depth first through the trie
// of their tokens (each subtree's prompts together, so every trie node is decoded once, as in
// lexicographic order), and at each branch the subtree that holds the oldest request (lowest
// seq) first, so that rows finish in the order they were asked instead of all at the end of
// the round. A prompt that is a prefix of others comes before them. Between subtrees whose
// oldest requests are the same, the one that continues cached (the tokens of the prompt
// decoded last, which the runtime still holds; nil for none) goes first: a row with prompts of
// two kinds (its decision and the injection detector's, say) then switches kind once a round
// instead of twice, and the first prompt of the round reuses the cache.
func order(round []*prompt, cached []int32) {
	slices.SortStableFunc(round, func(a, b *prompt) int { return slices.Compare(a.Tokens, b.Tokens) })
	orderFrom(round, 0, cached)
}

// bySeq orders prompts by their request's seq, oldest first.
func bySeq(a, b *prompt) int { return cmp.Compare(a.job.seq, b.job.seq) }

// orderFrom orders ps, sorted by tokens and sharing their first depth tokens, in place; cached
// is nil or shares those depth tokens.
func orderFrom(ps []*prompt, depth int, cached []int32) {
	if len(ps) < 2 {
		return
	}
	first, last := ps[0].Tokens, ps[len(ps)-1].Tokens
	for depth < min(len(first), len(last)) && first[depth] == last[depth] {
		depth++ // sorted: what the first and last share, every prompt between shares
	}
	if len(cached) <= depth || !slices.Equal(cached[:depth], first[:depth]) {
		cached = nil // no branch below continues it
	}
	type branch struct {
		ps   []*prompt
		seq  uint64 // the oldest request in it
		warm bool   // it continues cached
	}
	var ends []*prompt // the prompts that end at depth (identical), sorted first
	var bs []branch
	for i := 0; i < len(ps); {
		k := i + 1
		if len(ps[i].Tokens) == depth {
			for k < len(ps) && len(ps[k].Tokens) == depth {
				k++
			}
			ends = ps[i:k]
			slices.SortStableFunc(ends, bySeq)
			i = k
			continue
		}
		for k < len(ps) && ps[k].Tokens[depth] == ps[i].Tokens[depth] {
			k++
		}
		b := branch{ps: ps[i:k], seq: math.MaxUint64, warm: cached != nil && cached[depth] == ps[i].Tokens[depth]}
		for _, p := range b.ps {
			b.seq = min(b.seq, p.job.seq)
		}
		var below []int32
		if b.warm {
			below = cached
		}
		orderFrom(b.ps, depth+1, below)
		bs = append(bs, b)
		i = k
	}
	slices.SortStableFunc(bs, func(a, b branch) int {
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		switch {
		case a.warm == b.warm:
			return 0
		case a.warm:
			return -1
		}
		return 1
	})
	out := append(make([]*prompt, 0, len(ps)), ends...)
	for _, b := range bs {
		out = append(out, b.ps...)
	}
	copy(ps, out)
}

// live reports whether p's job still wants its decode, finishing a cancelled job, and stamps
// the job's first decode.
func (s *scheduler) live(p *prompt) bool {
	j := p.job
	if j.finished {
		return false
	}
	if err := j.ctx.Err(); err != nil {
		s.finish(j, nil, fmt.Errorf("gojev: %w", err))
		return false
	}
	if j.queued.IsZero() {
		j.queued = time.Now()
	}
	return true
}

// decodeOne decodes one prompt (Backend.NextToken); the decode aborts when its job is
// cancelled or the Decider closes.
func (s *scheduler) decodeOne(p *prompt) {
	d, j := s.d, p.job
	ctx, cancel := context.WithCancel(j.ctx)
	stop := context.AfterFunc(d.base, cancel)
	d.lockCPU()
	t0 := time.Now()
	var r backend.Readout
	var err error
	if j.kind == jobEmbed {
		if e, ok := d.rt.(backend.Embedder); ok {
			r.Embedding, r.Decoded, err = e.Embed(ctx, p.Tokens)
		} else {
			err = fmt.Errorf("%w: the runtime %s reads no embeddings", ErrOptions, d.rt.Name())
		}
	} else {
		r, err = d.rt.NextToken(ctx, p.Tokens, p.ids)
	}
	d.stats.decodeNS.Add(int64(time.Since(t0)))
	d.unlockCPU()
	stop()
	cancel()
	d.stats.decodes.Add(1)
	s.cached = p.Tokens
	if err != nil {
		s.cached = nil
		if cerr := j.ctx.Err(); cerr != nil {
			err = cerr
		}
		s.finish(j, nil, fmt.Errorf("gojev: row %s: %w", j.row.IDJSON(), err))
		return
	}
	s.complete(p, r)
}

// decodePacked decodes a group of prompts together (Packer.NextTokens). The decode aborts only
// when the Decider closes (the group serves several jobs); a job cancelled meanwhile is
// finished with its context's error when its readouts arrive. If the packed decode fails, the
// group is decoded again one prompt at a time, so that the error lands on its own row.
func (s *scheduler) decodePacked(pk backend.Packer, group []*prompt) {
	d := s.d
	group = slices.DeleteFunc(group, func(p *prompt) bool {
		if p.job.kind == jobEmbed { // read for a hidden state: one at a time
			s.decodeOne(p)
			return true
		}
		return false
	})
	if len(group) == 0 {
		return
	}
	if len(group) == 1 {
		s.decodeOne(group[0])
		return
	}
	tokens, ids := make([][]int32, len(group)), make([][]int32, len(group))
	for i, p := range group {
		tokens[i], ids[i] = p.Tokens, p.ids
	}
	d.lockCPU()
	t0 := time.Now()
	rs, err := pk.NextTokens(d.base, tokens, ids)
	d.stats.decodeNS.Add(int64(time.Since(t0)))
	d.unlockCPU()
	if err != nil {
		for _, p := range group {
			if s.live(p) {
				s.decodeOne(p)
			}
		}
		return
	}
	d.stats.decodes.Add(int64(len(group)))
	for i, p := range group {
		if s.live(p) {
			s.complete(p, rs[i])
		}
	}
}

// complete stores a prompt's readout and scores its job once every prompt has one.
func (s *scheduler) complete(p *prompt, r backend.Readout) {
	d, j := s.d, p.job
	d.stats.decodedTokens.Add(int64(r.Decoded))
	p.readout = r
	j.decoded += float64(r.Decoded)
	j.left--
	d.queued.Add(-1)
	if j.left == 0 {
		s.finish(j, d.score(j), nil)
	}
}

// enqueue hands a job of the request numbered seq to the scheduler.
func (d *Decider) enqueue(ctx context.Context, seq uint64, j *job) error {
	j.seq = seq
	d.queued.Add(int64(len(j.prompts)))
	select {
	case d.submit <- j:
		return nil
	case <-ctx.Done():
		d.queued.Add(-int64(len(j.prompts)))
		return fmt.Errorf("gojev: %w", ctx.Err())
	case <-d.quit:
		d.queued.Add(-int64(len(j.prompts)))
		return fmt.Errorf("gojev: %w", ErrClosed)
	}
}

func (d *Decider) wait(ctx context.Context, j *job) (*Result, error) {
	select {
	case <-j.done:
		return j.res, j.err
	case <-ctx.Done():
		return nil, fmt.Errorf("gojev: row %s: %w", j.row.IDJSON(), ctx.Err())
	case <-d.stopped:
		select {
		case <-j.done:
			return j.res, j.err
		default:
			return nil, fmt.Errorf("gojev: %w", ErrClosed)
		}
	}
}

// score turns a job whose prompts all have readouts into its Result (scheduler goroutine).
func (d *Decider) score(j *job) *Result {
	res := &Result{ID: j.row.IDJSON(), Label: j.row.Label, Backend: d.check.Backend, Renderer: d.check.Renderer, Decode: d.check.Decode,
		TemplateDate: d.check.TemplateDate}
	for _, p := range j.prompts {
		res.Stats.PromptTokens += p.NTokens
	}
	res.NPromptTokens = res.Stats.PromptTokens
	switch {
	case j.kind == jobEmbed:
		res.embeddings = make([][]float32, len(j.prompts))
		for i, p := range j.prompts {
			res.embeddings[i] = p.readout.Embedding
		}
		res.Stats.DecodedTokens = j.decoded
		d.stats.prompts.Add(int64(len(j.prompts)))
		d.stats.promptTokens.Add(int64(res.Stats.PromptTokens))
		return res
	case j.kind == jobNoul:
		p := j.prompts[0]
		yn := contract.ScoreBinaryReadout(p.readout.Logprobs, p.readout.Logits, d.bslots)
		res.PromptVersion, res.PromptSHA256, res.YesNo = contract.NoulPromptVersion, p.SHA256, &yn
		res.Chosen, res.Probability = "true", yn.PYes
		if yn.PYes < 0.5 {
			res.Chosen, res.Probability = "false", 1-yn.PYes
		}
	case j.kind == jobDetect:
		p := j.prompts[0]
		res.PromptVersion, res.PromptSHA256 = contract.DetectPromptVersion, p.SHA256
		res.Suspect = &Suspicion{PromptVersion: contract.DetectPromptVersion, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
			BinaryScore: contract.ScoreBinaryReadout(p.readout.Logprobs, p.readout.Logits, d.bslots)}
		res.Stats.DecodedTokens = j.decoded
		d.stats.prompts.Add(1)
		d.stats.promptTokens.Add(int64(p.NTokens))
		return res
	case j.kind != jobCandidates && d.opts.Contract.lettered() && !d.binaryRow(len(j.row.Options)):
		p := j.prompts[0]
		scores, chosen := contract.ScoreReadout(p.readout.Logprobs, p.readout.Logits, d.slots, j.row.Options)
		res.PromptVersion, res.PromptSHA256 = d.opts.Contract.String(), p.SHA256
		res.Chosen, res.ChosenLetter, res.Options = scores[chosen].ID, scores[chosen].Letter, scores
		res.Probability = scores[chosen].Probability
	default: // Binary, or a direct Decider's row of more than 16 options (ManyBinary)
		res.PromptVersion = contract.BinaryPromptVersion
		res.Candidates = make([]contract.CandidateScore, len(j.prompts))
		for i, p := range j.prompts {
			res.Candidates[i] = contract.CandidateScore{
				ID: j.row.Options[i].ID, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
				BinaryScore: contract.ScoreBinaryReadout(p.readout.Logprobs, p.readout.Logits, d.bslots),
			}
		}
		chosen := contract.RankCandidates(res.Candidates)
		res.Chosen, res.Probability = res.Candidates[chosen].ID, res.Candidates[chosen].PYes
	}
	if j.row.Label != "" {
		ok := res.Chosen == j.row.Label
		res.Correct = &ok
	}
	res.Stats.DecodedTokens = j.decoded
	if !j.queued.IsZero() {
		res.Stats.QueueMS = float64(j.queued.Sub(j.start).Microseconds()) / 1000
	}
	res.MS = float64(time.Since(j.start).Microseconds()) / 1000
	d.stats.rows.Add(1)
	d.stats.prompts.Add(int64(len(j.prompts)))
	d.stats.promptTokens.Add(int64(res.Stats.PromptTokens))
	return res
}
