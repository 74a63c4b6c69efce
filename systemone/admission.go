package systemone

import (
	"math"
	"sync"
	"time"

	"github.com/gojev/gojev"
)

// admission decides, when a request arrives, whether it can be answered within its deadline,
// from the work it brings and the work admitted before it; the Handler refuses it at once
// otherwise, with the time after which it can (Retry-After).
//
// Work is prompts and the tokens decoding them takes: the distinct tokens of a request's
// prompts, a prefix they share (the system text and the state, under one kind of prompt)
// counted once, as the scheduler decodes them one after another in the order of their tokens.
// A request's prompts are counted from its questions (gojev.Decider.Prompts), and its tokens
// estimated before they are rendered from the bytes of its state and questions: under each
// kind of prompt (a row's, a noul's), the head of its template (system text and chat template
// up to the state) once, the state once, and per prompt the rest of its template and its
// question, bytes turned into tokens at scale tokens per bytesPerToken bytes. Handler.Warmup
// measures the heads, the rests and the scale; every request prepared refines the scale, and
// its estimate is replaced by the exact count then (AskCall.Tokens).
//
// Time is perPrompt seconds a prompt (its read-out: a softmax over the vocabulary) plus
// perToken seconds a token, times level. The warm-up measures perPrompt and perToken from
// prompts of two lengths; level then follows the Decider's busy time (decoding and preparing,
// gojev.Stats) over the work the requests answered meanwhile were estimated at, a moving
// average, so that a machine that gets busier, or prompts that share more of their prefix with
// the one before, move the estimate. Without a warm-up, the first sample sets perToken alone.
//
// The expected wait of a new request is the time of the work admitted before it, which one
// scheduler decodes in turn, oldest request first. A request is admitted when nothing is
// admitted (an idle server admits every request it could ever take), or when that wait and
// its own work fit within admitHeadroom of its deadline and the prompts admitted stay within
// the prompt limit. Refused requests are told to come back at successive times (slots), one
// after another as the work ahead drains, not all at once.
type admission struct {
	mu         sync.Mutex
	maxPrompts int
	requests   int     // admitted and not yet released
	prompts    int     // their prompts
	tokens     float64 // their tokens (estimated, or exact once prepared)
	// The time model: seconds = level × (perPrompt × prompts + perToken × tokens); all zero
	// until measured (only the prompt limit applies then).
	perPrompt, perToken, level float64
	// head and rest are a prompt's template tokens, by kind (kindRow, kindNoul): before its
	// state, and after it (its question's tokens aside); scale the tokens per bytesPerToken
	// bytes of state and question.
	head, rest map[string]float64
	scale      float64
	last       gojev.Stats // the Decider's totals at the last sample
	// donePrompts and doneTokens are the work of the requests answered since the last sample.
	donePrompts int
	doneTokens  float64
	// slot is when the next refused request is told to come back (zero: now).
	slot time.Time
}

// The kinds of prompt whose template admission measures apart: a row's (a choice or score,
// under the Decider's contract) and a noul question's.
const (
	kindRow  = "row"
	kindNoul = "noul"
)

// part is the work of a request's questions of one kind: their prompts, its state's bytes (in
// every one of them), and their questions' bytes, summed over the prompts.
type part struct {
	kind            string
	prompts         int
	state, question float64
}

// ticket is one admitted request's share of the admitted work.
type ticket struct {
	prompts int
	tokens  float64
	parts   []part
}

// Why a request is refused.
const (
	refuseDeadline = "deadline" // the work ahead of it would not end within its deadline
	refusePrompts  = "prompts"  // the prompts admitted would pass the prompt limit
)

const (
	// admitHeadroom is the share of a request's deadline its expected wait and decode may
	// take: the rest absorbs the estimate's error, so that an admitted request does not wait
	// out its deadline only to fail.
	admitHeadroom = 0.8
	// bytesPerToken turns the bytes of a state and question into tokens, before scale.
	bytesPerToken = 4
	// defaultHead and defaultRest are a template's tokens before the warm-up measures them.
	defaultHead, defaultRest = 80, 20
	// minSampleBusy: a sample is taken once this much busy time passed since the last, so that
	// one short request does not swing the estimate.
	minSampleBusy = time.Second
	// sampleWeight is a new sample's weight in the moving averages.
	sampleWeight = 0.3
	// minRetry is the shortest Retry-After given.
	minRetry = 500 * time.Millisecond
)

func newAdmission(maxPrompts int, start gojev.Stats) *admission {
	return &admission{maxPrompts: maxPrompts, head: map[string]float64{}, rest: map[string]float64{}, scale: 1, last: start}
}

// restart starts the next sample from st (the end of the warm-up).
func (a *admission) restart(st gojev.Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.last, a.donePrompts, a.doneTokens = st, 0, 0
}

// seconds is the time the work of prompts prompts and tokens tokens takes (a.mu held); 0 when
// not measured yet.
func (a *admission) seconds(prompts int, tokens float64) float64 {
	return a.level * (a.perPrompt*float64(prompts) + a.perToken*tokens)
}

// templateOf is a kind's template tokens, head and rest (a.mu held): measured, else a row's,
// else the defaults.
func (a *admission) templateOf(kind string) (head, rest float64) {
	for _, k := range []string{kind, kindRow} {
		if h, ok := a.head[k]; ok {
			return h, a.rest[k]
		}
	}
	return defaultHead, defaultRest
}

// templateTokens is parts' template tokens: each kind's head once, its rest per prompt (a.mu
// held).
func (a *admission) templateTokens(parts []part) float64 {
	t := 0.0
	for _, p := range parts {
		head, rest := a.templateOf(p.kind)
		t += head + float64(p.prompts)*rest
	}
	return t
}

// estimate is the distinct tokens parts' prompts will have, before they are rendered.
func (a *admission) estimate(parts []part) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	t := a.templateTokens(parts)
	for _, p := range parts {
		t += a.scale * (p.state + p.question) / bytesPerToken
	}
	return t
}

// admit admits a request of prompts prompts (parts) and tokens tokens (estimate) that must be
// answered within deadline, or says why not and when to retry. Safe for concurrent use.
func (a *admission) admit(prompts int, parts []part, tokens float64, deadline time.Duration) (*ticket, string, time.Duration) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.requests > 0 {
		own := a.seconds(prompts, tokens)
		if over := a.prompts + prompts - a.maxPrompts; over > 0 {
			// The oldest admitted prompts must be decoded first: their share of the work.
			return nil, refusePrompts, a.retry(a.seconds(over, float64(over)*a.tokens/float64(a.prompts)), own)
		}
		done := a.seconds(a.prompts+prompts, a.tokens+tokens)
		if budget := admitHeadroom * deadline.Seconds(); done > budget {
			return nil, refuseDeadline, a.retry(done-budget, own)
		}
	}
	a.requests++
	a.prompts += prompts
	a.tokens += tokens
	return &ticket{prompts: prompts, tokens: tokens, parts: parts}, "", 0
}

// retry is when a refused request should come back (a.mu held): once wait has passed (the work
// ahead drained enough), and not before the requests refused before it had their turn; own
// is its work, the slot it takes.
func (a *admission) retry(wait, own float64) time.Duration {
	now := time.Now()
	at := now.Add(max(time.Duration(wait*float64(time.Second)), minRetry))
	if a.slot.After(at) {
		at = a.slot
	}
	a.slot = at.Add(time.Duration(own * float64(time.Second)))
	return at.Sub(now)
}

// prepared replaces an admitted request's estimate with its prompts' distinct tokens, and
// learns the scale of its bytes from the difference.
func (a *admission) prepared(t *ticket, tokens int) {
	if tokens <= 0 || t.prompts == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens += float64(tokens) - t.tokens
	t.tokens = float64(tokens)
	rest, bytes := float64(tokens)-a.templateTokens(t.parts), 0.0
	for _, p := range t.parts {
		bytes += p.state + p.question
	}
	if bytes >= 4*bytesPerToken && rest > 0 {
		a.scale += sampleWeight * (min(max(rest/(bytes/bytesPerToken), 0.25), 8) - a.scale)
	}
}

// release gives an admitted request's work back (answered, failed or abandoned); the work of
// an answered one counts toward the next sample (observe).
func (a *admission) release(t *ticket, answered bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.requests--
	a.prompts -= t.prompts
	a.tokens -= t.tokens
	if a.requests == 0 {
		a.prompts, a.tokens = 0, 0 // no rounding left behind
	}
	if answered {
		a.donePrompts += t.prompts
		a.doneTokens += t.tokens
	}
}

// observe takes a sample once enough busy time passed since the last one:
// the Decider's busy time (gojev.Stats) over the work the requests answered meanwhile were
// estimated at sets the time model's level, which so corrects the model's own error, not only
// a machine's speed (prefixes cached from one request to the next, the split between a
// prompt's and its tokens' cost). Before any warm-up, the first sample sets perToken alone.
func (a *admission) observe(st gojev.Stats) {
	a.mu.Lock()
	defer a.mu.Unlock()
	busy := time.Duration(st.DecodeNS + st.PrepareNS - a.last.DecodeNS - a.last.PrepareNS).Seconds()
	if busy < minSampleBusy.Seconds() || a.doneTokens <= 0 {
		return
	}
	if a.level == 0 {
		a.perPrompt, a.perToken, a.level = 0, busy/a.doneTokens, 1
	} else if model := a.perPrompt*float64(a.donePrompts) + a.perToken*a.doneTokens; model > 0 {
		a.level += sampleWeight * (busy/model - a.level)
	}
	a.last, a.donePrompts, a.doneTokens = st, 0, 0
}

// warmPoint is one warm-up request of one question: its kind, its state's and question's
// bytes, its prompt's tokens, the tokens decoded and the busy seconds it took.
type warmPoint struct {
	kind            string
	state, question float64
	prompt, decoded float64
	busy            float64
}

// learn sets each kind's template tokens and the scale of bytes from warm-up requests, two of
// each kind, a short state then a long one right after it (whose decode reuses the head it
// shares with the short one), and the time model from their times: perToken the least-squares
// slope of seconds against decoded tokens, perPrompt the rest.
func (a *admission) learn(points []warmPoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	byKind := map[string][]warmPoint{}
	for _, p := range points {
		byKind[p.kind] = append(byKind[p.kind], p)
	}
	for _, kind := range []string{kindRow, kindNoul} {
		ps := byKind[kind]
		if len(ps) < 2 || ps[0].state == ps[1].state {
			continue
		}
		s, l := ps[0], ps[1]
		scale := min(max((l.prompt-s.prompt)/((l.state-s.state)/bytesPerToken), 0.25), 8)
		if kind == kindRow || len(a.head) == 0 {
			a.scale = scale
		}
		head := max(l.prompt-l.decoded, 0)
		a.head[kind], a.rest[kind] = head, max(s.prompt-head-scale*(s.state+s.question)/bytesPerToken, 0)
	}
	var n, sx, sy, sxx, sxy float64
	for _, p := range points {
		if p.busy > 0 {
			n, sx, sy, sxx, sxy = n+1, sx+p.decoded, sy+p.busy, sxx+p.decoded*p.decoded, sxy+p.decoded*p.busy
		}
	}
	if n == 0 {
		return
	}
	slope := 0.0
	if den := n*sxx - sx*sx; den > 0 {
		slope = max((n*sxy-sx*sy)/den, 0)
	}
	a.perToken, a.perPrompt, a.level = slope, max((sy-slope*sx)/n, 0), 1
	if a.perToken == 0 && a.perPrompt == 0 {
		a.level = 0
	}
}

// load is what /metrics and /readyz report: the requests, prompts and tokens admitted, the
// time model's seconds a prompt and a decoded token (0: not measured yet), and the expected
// wait of a new request.
type load struct {
	Requests, Prompts         int
	Tokens                    float64
	SecPerPrompt, SecPerToken float64
	Wait                      time.Duration
}

func (a *admission) load() load {
	a.mu.Lock()
	defer a.mu.Unlock()
	return load{Requests: a.requests, Prompts: a.prompts, Tokens: a.tokens, SecPerPrompt: a.level * a.perPrompt,
		SecPerToken: a.level * a.perToken, Wait: time.Duration(a.seconds(a.prompts, a.tokens) * float64(time.Second))}
}

// retryAfter writes a delay as the Retry-After header's whole seconds (rounded up, at least
// 1) and Retry-After-Ms's milliseconds (the official client reads the second first).
func retryAfter(d time.Duration) (seconds, ms string) {
	s := int64(math.Ceil(d.Seconds()))
	return itoa(max(s, 1)), itoa(max(d.Milliseconds(), 1))
}
