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
// prompts, a prefix they share (the system text, the state, the start of similar questions)
// counted once, as the scheduler decodes them one after another in the order of their tokens.
// A request's prompts are counted from its questions (gojev.Decider.Prompts), and its tokens
// estimated before they are rendered from the bytes of its prompts' user messages
// (gojev.Decider.UserMessages, a prefix they share counted once): under each kind of prompt (a
// row's, a noul's), the template's head (the system text and the chat template before the user
// message) once, its tail per prompt, and the user messages' bytes at scale tokens per
// bytesPerToken bytes. Handler.Warmup measures each kind's template and scale from prompts of
// two lengths; every request prepared refines a common adjustment of the scales, and its
// estimate is replaced by the exact count then (AskCall.Tokens).
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
	// kinds are each kind of prompt's template and scale (kindRow, kindNoul); adjust corrects
	// every scale by what the requests prepared measured.
	kinds  map[string]kindModel
	adjust float64
	last   gojev.Stats // the Decider's totals at the last sample
	// donePrompts and doneTokens are the work of the requests answered since the last sample.
	donePrompts int
	doneTokens  float64
	// slot is when the next refused request is told to come back (zero: now); lastRefused
	// when a request was last refused for its deadline.
	slot, lastRefused time.Time
	// warm marks a time model measured by the warm-up, not yet by live work: the first sample
	// replaces its level rather than moving it.
	warm bool
}

// The kinds of prompt whose template admission measures apart: a row's (a choice or score,
// under the Decider's contract) and a noul question's.
const (
	kindRow  = "row"
	kindNoul = "noul"
)

// kindModel is a kind of prompt's tokens: head (before the user message: the system text and
// chat markup, decoded once for a request's prompts of the kind), tail (the rest outside the
// user message, each prompt) and scale (tokens per bytesPerToken bytes of user message).
type kindModel struct {
	head, tail, scale float64
}

// part is the work of a request's questions of one kind: their prompts, and their user
// messages' bytes, a prefix they share counted once.
type part struct {
	kind    string
	prompts int
	bytes   float64
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
	// bytesPerToken turns the bytes of a user message into tokens, before scale.
	bytesPerToken = 4
	// minSampleBusy: a sample is taken once this much busy time passed since the last, so that
	// one short request does not swing the estimate.
	minSampleBusy = time.Second
	// sampleWeight is a new sample's weight in the moving averages.
	sampleWeight = 0.3
	// minRetry is the shortest Retry-After given.
	minRetry = 500 * time.Millisecond
)

func newAdmission(maxPrompts int, start gojev.Stats) *admission {
	return &admission{maxPrompts: maxPrompts, kinds: map[string]kindModel{}, adjust: 1, last: start}
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

// defaultKind is a kind's model before the warm-up measures one: a chat template's markup and
// a short system text.
var defaultKind = kindModel{head: 80, tail: 10, scale: 1}

// kindOf is a kind's model (a.mu held): measured, else a row's, else the default.
func (a *admission) kindOf(kind string) kindModel {
	for _, k := range []string{kind, kindRow} {
		if m, ok := a.kinds[k]; ok {
			return m
		}
	}
	return defaultKind
}

// templateTokens is parts' template tokens: each kind's head once, its tail per prompt (a.mu
// held); scaled their user messages' tokens before the adjustment.
func (a *admission) templateTokens(parts []part) (template, scaled float64) {
	for _, p := range parts {
		m := a.kindOf(p.kind)
		template += m.head + float64(p.prompts)*m.tail
		scaled += m.scale * p.bytes / bytesPerToken
	}
	return template, scaled
}

// estimate is the distinct tokens parts' prompts will have, before they are rendered.
func (a *admission) estimate(parts []part) float64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	template, scaled := a.templateTokens(parts)
	return template + a.adjust*scaled
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

// refused notes a request refused for its deadline (readiness: overloaded).
func (a *admission) refused() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastRefused = time.Now()
}

// retry is when a refused request should come back (a.mu held): once wait has passed (the work
// ahead drained enough), and not before the requests refused before it had their turn; own
// is its work, of which its slot takes admitHeadroom, so that an estimate up to 1/admitHeadroom
// too long still brings requests back before the work ahead has drained (one back too early is
// refused again, with a later slot), and the decoder is not left idle.
func (a *admission) retry(wait, own float64) time.Duration {
	now := time.Now()
	at := now.Add(max(time.Duration(wait*float64(time.Second)), minRetry))
	if a.slot.After(at) {
		at = a.slot
	}
	a.slot = at.Add(time.Duration(admitHeadroom * own * float64(time.Second)))
	return at.Sub(now)
}

// prepared replaces an admitted request's estimate with its prompts' distinct tokens, and
// adjusts the scales by what its user messages really made.
func (a *admission) prepared(t *ticket, tokens int) {
	if tokens <= 0 || t.prompts == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.tokens += float64(tokens) - t.tokens
	t.tokens = float64(tokens)
	if template, scaled := a.templateTokens(t.parts); scaled >= 4 && float64(tokens) > template {
		a.adjust += sampleWeight * (min(max((float64(tokens)-template)/scaled, 0.25), 4) - a.adjust)
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
	model := a.perPrompt*float64(a.donePrompts) + a.perToken*a.doneTokens
	switch {
	case a.level == 0:
		a.perPrompt, a.perToken, a.level = 0, busy/a.doneTokens, 1
	case model > 0 && a.warm:
		// The warm-up's few prompts, perhaps on a machine busy with something else then: the
		// first second of real work sets the level.
		a.level, a.warm = busy/model, false
	case model > 0:
		a.level += sampleWeight * (busy/model - a.level)
	}
	a.last, a.donePrompts, a.doneTokens = st, 0, 0
}

// warmPoint is one warm-up request of one question: its kind, its user message's bytes, its
// prompt's tokens, the tokens decoded and the busy seconds it took.
type warmPoint struct {
	kind            string
	bytes           float64
	prompt, decoded float64
	busy            float64
}

// learn sets each kind's model from warm-up requests, two of each kind, a short user message
// then a long one right after it (whose decode reuses the head it shares with the short one),
// and the time model from their times: perToken the least-squares slope of seconds against
// decoded tokens, perPrompt the rest.
func (a *admission) learn(points []warmPoint) {
	a.mu.Lock()
	defer a.mu.Unlock()
	byKind := map[string][]warmPoint{}
	for _, p := range points {
		byKind[p.kind] = append(byKind[p.kind], p)
	}
	for _, kind := range []string{kindRow, kindNoul} {
		ps := byKind[kind]
		if len(ps) < 2 || ps[0].bytes == ps[1].bytes {
			continue
		}
		s, l := ps[0], ps[1]
		m := kindModel{scale: min(max((l.prompt-s.prompt)/((l.bytes-s.bytes)/bytesPerToken), 0.25), 8)}
		template := s.prompt - m.scale*s.bytes/bytesPerToken // head and tail
		m.head = min(max(l.prompt-l.decoded, 0), max(template, 0))
		m.tail = max(template-m.head, 0)
		a.kinds[kind] = m
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
	a.perToken, a.perPrompt, a.level, a.warm = slope, max((sy-slope*sx)/n, 0), 1, true
	if a.perToken == 0 && a.perPrompt == 0 {
		a.level, a.warm = 0, false
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
	Refused                   time.Time // when a request was last refused for its deadline
}

func (a *admission) load() load {
	a.mu.Lock()
	defer a.mu.Unlock()
	return load{Requests: a.requests, Prompts: a.prompts, Tokens: a.tokens, SecPerPrompt: a.level * a.perPrompt,
		SecPerToken: a.level * a.perToken, Wait: time.Duration(a.seconds(a.prompts, a.tokens) * float64(time.Second)), Refused: a.lastRefused}
}

// retryAfter writes a delay as the Retry-After header's whole seconds (rounded up, at least
// 1) and Retry-After-Ms's milliseconds (the official client reads the second first).
func retryAfter(d time.Duration) (seconds, ms string) {
	s := int64(math.Ceil(d.Seconds()))
	return itoa(max(s, 1)), itoa(max(d.Milliseconds(), 1))
}
