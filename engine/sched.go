package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/llama"
)

// maxRound bounds the prompts one round takes, so a steady stream of requests cannot starve
// the ones already waiting.
const maxRound = 512

// scheduler is the state the scheduler goroutine owns: the prompts waiting and the tokens
// sequence 0 holds in the KV cache.
type scheduler struct {
	e       *Engine
	pending []*prompt
	cached  []llama.Token // the tokens in sequence 0's cells 0..len-1
}

func (s *scheduler) init(e *Engine) { s.e = e }

// loop is the scheduler goroutine: it gathers queued jobs, decides them round by round, and
// fails what is left when the Engine closes.
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

// run decides one round. Its prompts are decoded in lexicographic order of their tokens, one
// at a time in sequence 0, each after cutting the KV cache back to the longest prefix it shares
// with the prompt before it: in that order every node of the round's token trie (the shared
// system prompt and template head, a row's evidence shared by its binary candidates or by
// several questions about one state) is decoded exactly once. A prompt's cells are its
// positions, as when it is decoded alone, so the logits are bit-identical to package decide's.
func (s *scheduler) run(round []*prompt) {
	e := s.e
	e.stats.rounds.Add(1)
	slices.SortStableFunc(round, func(a, b *prompt) int { return compareTokens(a.Tokens, b.Tokens) })
	for _, p := range round {
		j := p.job
		if j.finished {
			continue
		}
		if err := j.ctx.Err(); err != nil {
			s.finish(j, nil, fmt.Errorf("engine: %w", err))
			continue
		}
		if j.queued.IsZero() {
			j.queued = time.Now()
		}
		ctx, cancel := context.WithCancel(j.ctx)
		stop := context.AfterFunc(e.base, cancel)
		logits, decoded, err := s.decode(ctx, p.Tokens)
		stop()
		cancel()
		if err != nil {
			if cerr := j.ctx.Err(); cerr != nil {
				err = cerr
			}
			s.finish(j, nil, fmt.Errorf("engine: row %s: %w", j.row.IDJSON(), err))
			continue
		}
		p.logits = logits
		j.decoded += float64(decoded)
		j.left--
		if j.left == 0 {
			res, err := e.score(j)
			s.finish(j, res, err)
		}
	}
}

// decode decodes tokens in sequence 0 after the prefix already cached and returns a copy of
// the next-token logits and how many tokens it decoded. backend.DecodePlan says what to keep
// and how to batch: the shared prefix rounded down to a multiple of backend.Align, at least
// two tokens decoded, near-equal chunks of at most n_batch aligned to absolute positions, so
// every token is computed exactly as when its prompt is decoded alone.
func (s *scheduler) decode(ctx context.Context, tokens []llama.Token) ([]float32, int, error) {
	e := s.e
	keep, spans := backend.DecodePlan(s.cached, tokens, e.opts.NBatch)
	if keep < len(s.cached) {
		if ok, err := e.lctx.SeqRm(0, keep, -1); err != nil || !ok {
			keep, spans = backend.DecodePlan(nil, tokens, e.opts.NBatch)
			if err := e.lctx.MemoryClear(); err != nil {
				return nil, 0, err
			}
		}
	}
	s.cached = s.cached[:keep]
	last := 0
	for _, span := range spans {
		e.batch.Clear()
		for i := span[0]; i < span[1]; i++ {
			row, err := e.batch.Add(tokens[i], i, []int{0}, i == len(tokens)-1)
			if err != nil {
				return nil, 0, err
			}
			last = row
		}
		e.stats.decodes.Add(1)
		e.cpu.Lock()
		t0 := time.Now()
		err := e.lctx.Decode(ctx, e.batch)
		e.stats.decodeNS.Add(int64(time.Since(t0)))
		e.cpu.Unlock()
		if err != nil {
			s.cached = s.cached[:0]
			_ = e.lctx.MemoryClear()
			return nil, 0, err
		}
		s.cached = append(s.cached, tokens[span[0]:span[1]]...)
		e.stats.decodedTokens.Add(int64(span[1] - span[0]))
	}
	logits, err := e.lctx.Logits(last)
	if err != nil {
		return nil, 0, err
	}
	return slices.Clone(logits), len(tokens) - keep, nil
}

func compareTokens(a, b []llama.Token) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return len(a) - len(b)
}
