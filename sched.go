package gojev

import (
	"context"
	"fmt"
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
	detect   bool // the injection detector's prompt, scored into Result.Suspect
}

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
		n := min(len(s.pending), maxRound)
		round := s.pending[:n:n]
		s.pending = s.pending[n:]
		s.run(round)
	}
}

func (s *scheduler) add(j *job) { s.pending = append(s.pending, j.prompts...) }

func (s *scheduler) finish(j *job, res *Result, err error) {
	if j.finished {
		return
	}
	j.finished, j.res, j.err = true, res, err
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

// run decides one round. Its prompts go to the runtime in lexicographic order of their
// tokens, one at a time: in that order each prompt shares the longest possible prefix with the
// one before it, and the in-process runtime, which keeps the previous prompt in its KV cache
// and decodes only what follows the common prefix, decodes every node of the round's token
// trie (the shared system prompt and template head, a row's evidence shared by its binary
// candidates, several questions about one state) exactly once. A server with a prompt cache
// gains the same way.
func (s *scheduler) run(round []*prompt) {
	d := s.d
	d.stats.rounds.Add(1)
	slices.SortStableFunc(round, func(a, b *prompt) int { return slices.Compare(a.Tokens, b.Tokens) })
	pk, packed := d.rt.(backend.Packer)
	if !packed || pk.PackSeqs() < 2 {
		for _, p := range round {
			if s.live(p) {
				s.decodeOne(p)
			}
		}
		return
	}
	// Packed: consecutive prompts (which share the longest prefixes) go to the runtime
	// PackSeqs at a time.
	var group []*prompt
	for i, p := range round {
		if s.live(p) {
			group = append(group, p)
		}
		if len(group) == pk.PackSeqs() || (i == len(round)-1 && len(group) > 0) {
			s.decodePacked(pk, group)
			group = group[:0]
		}
	}
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
	d.cpu.Lock()
	t0 := time.Now()
	r, err := d.rt.NextToken(ctx, p.Tokens, p.ids)
	d.stats.decodeNS.Add(int64(time.Since(t0)))
	d.cpu.Unlock()
	stop()
	cancel()
	d.stats.decodes.Add(1)
	if err != nil {
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
	if len(group) == 1 {
		s.decodeOne(group[0])
		return
	}
	tokens, ids := make([][]int32, len(group)), make([][]int32, len(group))
	for i, p := range group {
		tokens[i], ids[i] = p.Tokens, p.ids
	}
	d.cpu.Lock()
	t0 := time.Now()
	rs, err := pk.NextTokens(d.base, tokens, ids)
	d.stats.decodeNS.Add(int64(time.Since(t0)))
	d.cpu.Unlock()
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
	if j.left == 0 {
		s.finish(j, d.score(j), nil)
	}
}

func (d *Decider) enqueue(ctx context.Context, j *job) error {
	select {
	case d.submit <- j:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("gojev: %w", ctx.Err())
	case <-d.quit:
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
	case j.detect:
		p := j.prompts[0]
		res.PromptVersion, res.PromptSHA256 = contract.DetectPromptVersion, p.SHA256
		res.Suspect = &Suspicion{PromptVersion: contract.DetectPromptVersion, PromptSHA256: p.SHA256, NPromptTokens: p.NTokens,
			BinaryScore: contract.ScoreBinaryReadout(p.readout.Logprobs, p.readout.Logits, d.bslots)}
		res.Stats.DecodedTokens = j.decoded
		d.stats.prompts.Add(1)
		d.stats.promptTokens.Add(int64(p.NTokens))
		return res
	case d.opts.Contract.lettered():
		p := j.prompts[0]
		scores, chosen := contract.ScoreReadout(p.readout.Logprobs, p.readout.Logits, d.slots, j.row.Options)
		res.PromptVersion, res.PromptSHA256 = d.opts.Contract.String(), p.SHA256
		res.Chosen, res.ChosenLetter, res.Options = scores[chosen].ID, scores[chosen].Letter, scores
		res.Probability = scores[chosen].Probability
	case d.opts.Contract == Binary:
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
