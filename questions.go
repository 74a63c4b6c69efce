package gojev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/knockout"
	"github.com/gojev/gojev/pyjson"
)

// Typed questions, as programs ask them of decision models through TypeSafe's System One API
// (POST /v1/systemone; package systemone serves and calls it): several named questions about
// one state, each a Choice, a Score or a Noul. Choice and Score are rows of the Decider's
// contract, the seed's prompts unchanged: the state is the evidence, the instructions the
// criterion, and the criteria the options (a score's levels the options "0" … "n−1", in rubric
// order). A Noul, a yes/no question with no candidates, has a contract of its own (noul-v1,
// contract.NoulMessages), read as the binary contract reads yes and no.

// Question is one typed question about a state: a Choice, a Score or a Noul.
type Question interface {
	// Type is the question's type in the System One API: "choice", "score" or "noul".
	Type() string
}

// Choice asks which of named criteria applies (System One's "choice").
type Choice struct {
	// Instructions is what to decide: a string, or a JSON object or array (written as
	// Python's json.dumps writes it); it is the direct contract's criterion ("" when nil).
	Instructions any
	// Criteria are the choices, in the order the prompt lists them (1 to 256): each a name,
	// which the answer returns, and a description of when it applies.
	Criteria []Criterion
}

// Criterion is one named choice of a Choice. Description is a string, a JSON object or array,
// or nil: a choice without a description is read by its name alone (the name is its
// description).
type Criterion struct {
	Name        string
	Description any
}

// Score asks for a level of an ordered rubric (System One's "score").
type Score struct {
	// Instructions is what to rate (as Choice's).
	Instructions any
	// Levels are the rubric's levels, lowest first (1 to 256): each a description (a string,
	// or a JSON object or array). Level i is the option "i"; its description the option's.
	Levels []any
}

// Noul asks a yes/no question, or states a statement to judge true or false (System One's
// "noul"): its answer is P(yes).
type Noul struct {
	// Instructions is the question or statement (a string, or a JSON object or array).
	Instructions any
	// True and False say what counts as yes and as no (optional; nil: not said).
	True, False any
}

// Type is "choice".
func (Choice) Type() string { return "choice" }

// Type is "score".
func (Score) Type() string { return "score" }

// Type is "noul".
func (Noul) Type() string { return "noul" }

// Answer is one typed question's answer. Choice: Choice, Probabilities by criterion name and
// Confidence. Score: Score (the expected level Σ i·pᵢ), Probabilities and Legend keyed "0" …
// "n−1", and Confidence. Noul: Noul, the probability of yes.
//
// A Choice's or Score's probabilities are those its Result chose with: the knockout's
// distribution over every option, else the calibrated ones (Options.Calibration), else the
// debiased ones (Options.Debias), else the raw softmax over the listed options; under the
// binary contract each option's p_yes, normalised to sum to 1. Confidence is the normalised
// margin of the top probability over uniform, (p_max − 1/k) / (1 − 1/k) for k options (1 for
// k = 1): 0 when every option is equally likely, 1 when one is certain. A Noul's probability is
// its p_yes (softmax of the pooled yes and no logits), calibrated under a profile that holds the
// "noul" scoring.
//
// As JSON (MarshalJSON) an Answer has its type's fields only, each always present, a zero
// included: a choice's "choice", "confidence" and "probabilities"; a score's "score",
// "confidence", "legend" and "probabilities"; a noul's "noul".
type Answer struct {
	Type          string             `json:"type"`
	Choice        string             `json:"choice,omitempty"`
	Score         float64            `json:"score"`
	Noul          float64            `json:"noul"`
	Confidence    float64            `json:"confidence"`
	Legend        map[string]any     `json:"legend,omitempty"`
	Probabilities map[string]float64 `json:"probabilities,omitempty"`
	// Result is the decision behind the answer, with its prompt_version, prompt_sha256, raw
	// scores and token counts (a Noul's: PromptVersion noul-v1, YesNo its readout).
	Result *Result `json:"-"`
}

// MarshalJSON writes the answer with its type's fields only (see Answer); an answer of another
// type writes every field.
func (a Answer) MarshalJSON() ([]byte, error) {
	switch a.Type {
	case "choice":
		return json.Marshal(struct {
			Type          string             `json:"type"`
			Choice        string             `json:"choice"`
			Confidence    float64            `json:"confidence"`
			Probabilities map[string]float64 `json:"probabilities"`
		}{a.Type, a.Choice, a.Confidence, a.Probabilities})
	case "score":
		return json.Marshal(struct {
			Type          string             `json:"type"`
			Score         float64            `json:"score"`
			Confidence    float64            `json:"confidence"`
			Legend        map[string]any     `json:"legend"`
			Probabilities map[string]float64 `json:"probabilities"`
		}{a.Type, a.Score, a.Confidence, a.Legend, a.Probabilities})
	case "noul":
		return json.Marshal(struct {
			Type string  `json:"type"`
			Noul float64 `json:"noul"`
		}{a.Type, a.Noul})
	}
	type plain Answer // without this method
	return json.Marshal(plain(a))
}

// ErrQuestion: a typed question is malformed (an empty name, no criteria, a criterion name
// given twice, a value that is not JSON). Ask wraps it in a *QuestionError.
var ErrQuestion = errors.New("gojev: invalid question")

// QuestionError is an error of one named question of an Ask: its name and why (a malformed
// question wraps ErrQuestion; a question that cannot be decided wraps the row's error, such as
// backend.ErrPromptTooLong).
type QuestionError struct {
	Name string
	Err  error
}

func (e *QuestionError) Error() string { return fmt.Sprintf("question %q: %v", e.Name, e.Err) }

func (e *QuestionError) Unwrap() error { return e.Err }

// Ask decides typed questions about one state together and returns their answers by name. The
// questions' prompts go to the scheduler together, so the tokens they share (a state's
// evidence under one contract's system text) are decoded once, and concurrent Asks and Decides
// share decodes as Decide's rows do. state is any value encoding/json can marshal (rows read by
// contract.ParseRow, or pyjson.Decode, keep their key order). The error is a *QuestionError for
// the first question (in name order) that is malformed or cannot be decided, or ctx's (wrapped)
// or ErrClosed; no answer is returned with it.
func (d *Decider) Ask(ctx context.Context, state any, questions map[string]Question) (map[string]*Answer, error) {
	c, err := d.BeginAsk(ctx, state, questions)
	if err != nil {
		return nil, err
	}
	return c.Wait(ctx)
}

// AskCall is an Ask begun by BeginAsk and not yet waited for. Wait may be called once, from any
// goroutine.
type AskCall struct {
	d         *Decider
	questions map[string]Question
	names     []string
	rows      []*Call
	nouls     []*noulCall
	// ready is closed when questions prepared on a preparing goroutine are enqueued (or one
	// failed: err); nil when BeginAsk prepared them.
	ready chan struct{}
	err   error
}

// BeginAsk is the first half of Ask, as Begin is Decide's: it checks every question, then
// renders and checks every question's prompts (their length against n_ctx included), in name
// order, and only when all of them passed hands them to the scheduler, so that a request
// refused for one question decodes none of the others. A caller that reads states in order
// (batch.Run) has them decoded in that order. Errors are Ask's for the first question (in name
// order) that cannot be begun. Where preparing overlaps decoding (Begin), the prompts are
// prepared on a preparing goroutine and their errors come from Wait.
func (d *Decider) BeginAsk(ctx context.Context, state any, questions map[string]Question) (*AskCall, error) {
	c := &AskCall{d: d, questions: questions}
	for n := range questions {
		c.names = append(c.names, n)
	}
	slices.Sort(c.names)
	if len(c.names) == 0 {
		return nil, fmt.Errorf("%w: no questions", ErrQuestion)
	}
	// What can be checked without rendering, for every question first.
	rows := make([]contract.Row, len(c.names))
	nouls := make([]*Noul, len(c.names))
	for i, n := range c.names {
		var err error
		switch q := questions[n].(type) {
		case Noul:
			nouls[i], err = &q, d.checkNoul(n, q)
		case *Noul:
			if q == nil {
				err = fmt.Errorf("%w: no question", ErrQuestion)
				break
			}
			nouls[i], err = q, d.checkNoul(n, *q)
		default:
			rows[i], err = questionRow(n, state, q)
		}
		if err != nil {
			return nil, &QuestionError{Name: n, Err: err}
		}
	}
	seqs := make([]uint64, len(c.names))
	for i := range seqs {
		seqs[i] = d.next.Add(1)
	}
	if d.serial {
		d.preparingAdd(1)
		defer d.preparingAdd(-1)
		c.err = c.prepare(ctx, state, rows, nouls, seqs)
		if c.err != nil {
			return nil, c.err
		}
		return c, nil
	}
	d.preparingAdd(1)
	var err error
	if c.ready, err = d.goPrepare(ctx, func() { c.err = c.prepare(ctx, state, rows, nouls, seqs) }); err != nil {
		return nil, err
	}
	return c, nil
}

// prepare renders and checks every question's prompts, then enqueues them all; its error is a
// *QuestionError for the first question that failed (nothing enqueued then), or ctx's or
// ErrClosed while enqueueing.
func (c *AskCall) prepare(ctx context.Context, state any, rows []contract.Row, nouls []*Noul, seqs []uint64) error {
	d := c.d
	c.rows, c.nouls = make([]*Call, len(c.names)), make([]*noulCall, len(c.names))
	for i, n := range c.names {
		var err error
		if q := nouls[i]; q != nil {
			var j *job
			j, err = d.noulJob(ctx, n, state, *q)
			c.nouls[i] = &noulCall{j: j, seq: seqs[i]}
		} else {
			var r *request
			method, reverse := d.opts.Debias, false
			if d.readsBothOrders(c.questions[n]) {
				// The reverse read is the score's bias control; PriDe's prior (fitted on choice
				// rows) only where it is asked for.
				reverse = true
				if method == debias.Default {
					method = debias.None
				}
			}
			r, err = d.prepareSeq(ctx, seqs[i], rows[i], method, d.opts.Permute, reverse)
			c.rows[i] = &Call{d: d, r: r}
		}
		if err == nil {
			if q := d.questionScoring(c.questions[n]); q != "" {
				if r := c.rows[i]; r != nil {
					r.r.question = q
				} else {
					c.nouls[i].question = q
				}
			}
		}
		if err != nil {
			return &QuestionError{Name: n, Err: err}
		}
	}
	for i := range c.names {
		var err error
		if nc := c.nouls[i]; nc != nil {
			err = d.enqueue(ctx, nc.seq, nc.j)
		} else {
			err = d.enqueueRequest(ctx, c.rows[i].r)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Tokens counts the tokens of every prompt the Ask prepared (its questions' prompts, and a
// knockout's group passes but not its final pass, prepared once they are decoded): prompt, all
// of them, as a run without prefix reuse decodes them; distinct, those left when the prefixes
// its prompts share (the state, after each system text) are counted once, what decoding them
// one after another in the order of their tokens takes. Both 0 where the prompts are prepared
// on a preparing goroutine and are not yet (BeginAsk).
func (c *AskCall) Tokens() (prompt, distinct int) {
	if c.ready != nil {
		select {
		case <-c.ready:
		default:
			return 0, 0
		}
	}
	var all [][]int32
	for i := range c.names {
		if nc := c.nouls[i]; nc != nil {
			all = nc.j.appendTokens(all)
		} else if r := c.rows[i]; r != nil {
			all = r.r.appendTokens(all)
		}
	}
	slices.SortFunc(all, slices.Compare)
	var prev []int32
	for _, t := range all {
		common := 0
		for common < min(len(t), len(prev)) && t[common] == prev[common] {
			common++
		}
		prompt, distinct, prev = prompt+len(t), distinct+len(t)-common, t
	}
	return prompt, distinct
}

// Wait waits for every question's answer; its errors are Ask's.
func (c *AskCall) Wait(ctx context.Context) (map[string]*Answer, error) {
	if c.ready != nil {
		select {
		case <-c.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("gojev: %w", ctx.Err())
		}
		if c.err != nil {
			return nil, c.err
		}
	}
	out := make(map[string]*Answer, len(c.names))
	var first error
	for i, n := range c.names {
		var res *Result
		var err error
		if r := c.rows[i]; r != nil {
			res, err = r.Wait(ctx)
		} else {
			res, err = c.d.endNoul(ctx, c.nouls[i])
		}
		if err != nil {
			if first == nil {
				first = &QuestionError{Name: n, Err: err}
			}
			continue
		}
		out[n] = answerOf(c.questions[n], res)
	}
	if first != nil {
		return nil, first
	}
	return out, nil
}

// Prompts is how many prompts the Decider reads to answer q, counted without rendering it:
// one for a Noul; for a Choice or Score of k criteria, those of a row of k options under the
// Decider's contract and bias control (one; Options.Permute's shifts, or k under Cyclic; k
// under the binary contract, with contextual calibration's content-free prompts, which a
// Decider reads once per question and criterion; a knockout's group passes and its final
// pass; a shortlist's state embedding and the kept options' binary prompts, not the option
// texts' embeddings a Decider reads once), and the injection detector's one. A Score read in both orders (Options.ScoreReading)
// is two rows' prompts, and the first time the Decider sees its rubric six more: its
// content-free reads. 0 for a question that is not a Choice, Score or Noul. An upper bound, for
// admission control and metering (systemone.Handler).
func (d *Decider) Prompts(q Question) int {
	switch q := q.(type) {
	case Noul, *Noul:
		return 1
	case Choice:
		return d.rowPrompts(len(q.Criteria), d.opts.Detect)
	case *Choice:
		return d.Prompts(*q)
	case Score:
		if d.readsBothOrders(q) {
			n := 1 + d.rowPrompts(len(q.Levels), d.opts.Detect)
			if row, err := questionRow("q", "", q); err == nil { // the key is the question's, not the state's
				if _, ok := d.levels.cached(levelsKey(row)); !ok {
					n += 2 * len(debias.ContentFreeEvidence) // the rubric's content-free reads, once
				}
			}
			return n
		}
		return d.rowPrompts(len(q.Levels), d.opts.Detect)
	case *Score:
		return d.Prompts(*q)
	}
	return 0
}

// UserMessages are the user messages of q's prompts about state, as the Decider's contract
// writes them before the chat template renders them (nothing rendered, nothing tokenized): a
// Noul's one; a Choice's or Score's row's, one under a direct contract or one per criterion
// under the binary contract, for a knockout each group pass's; the injection detector's. A
// request's further prompts (permutations of the same options, a knockout's final pass) are
// not among them: Prompts counts them. For estimating a request's cost before it is prepared
// (systemone's admission). Errors are the question's (ErrQuestion, contract.ErrRow, ...).
func (d *Decider) UserMessages(state any, q Question) ([]string, error) {
	if p, ok := q.(*Noul); ok {
		if p == nil {
			return nil, fmt.Errorf("%w: no question", ErrQuestion)
		}
		q = *p
	}
	var sets [][]contract.ChatMessage
	switch q := q.(type) {
	case Noul:
		texts, err := noulTexts(q)
		if err != nil {
			return nil, err
		}
		evidence, err := contract.EvidenceJSON(state)
		if err != nil {
			return nil, err
		}
		sets = append(sets, contract.NoulMessages(evidence, texts[0], texts[1], texts[2]))
	default:
		row, err := questionRow("q", state, q)
		if err != nil {
			return nil, err
		}
		rows, asBinary := []contract.Row{row}, false
		if d.shortlistRow(len(row.Options)) {
			// the binary prompts of as many options as are kept; which ones, the ranker says
			rows[0].Options, asBinary = rows[0].Options[:d.opts.shortlisted(len(row.Options))], true
		} else if len(row.Options) > contract.MaxOptions && d.opts.Contract.lettered() && !d.opts.manyBinary() {
			plan, err := d.plan(row)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", contract.ErrRow, err)
			}
			rows = rows[:0]
			for _, idx := range plan.Groups {
				rows = append(rows, subRow(row, idx))
			}
		}
		for _, r := range rows {
			s, _, err := d.rowMessagesAs(r, asBinary)
			if err != nil {
				return nil, err
			}
			sets = append(sets, s...)
		}
		if d.opts.Detect {
			evidence, err := contract.EvidenceJSON(state)
			if err != nil {
				return nil, err
			}
			sets = append(sets, contract.DetectMessages(evidence))
		}
	}
	var out []string
	for _, msgs := range sets {
		for _, m := range msgs {
			if m.Role == "user" {
				out = append(out, m.Content)
			}
		}
	}
	return out, nil
}

// questionScoring is the scoring of Options.QuestionCalibration that calibrates q's answers,
// or "" when it holds none for q.
func (d *Decider) questionScoring(q Question) string {
	p := d.opts.QuestionCalibration
	if p == nil {
		return ""
	}
	key, err := QuestionSHA256(q)
	if err != nil {
		return ""
	}
	name := calibrate.QuestionScoring(key)
	if _, ok := p.Scorings[name]; !ok {
		return ""
	}
	return name
}

// readsBothOrders reports whether the Decider reads q's rubric listed and reversed: a Score of
// 2 to 16 levels, under a lettered contract, ScoreReading not ReadListed, no cyclic shifts.
func (d *Decider) readsBothOrders(q Question) bool {
	var k int
	switch q := q.(type) {
	case Score:
		k = len(q.Levels)
	case *Score:
		k = len(q.Levels)
	default:
		return false
	}
	return d.opts.ScoreReading != ReadListed && k > 1 && k <= contract.MaxOptions && d.opts.Contract.lettered() &&
		d.opts.Debias != debias.Cyclic && d.opts.Permute <= 1
}

// rowPrompts is Prompts for a row of k options.
func (d *Decider) rowPrompts(k int, detect bool) int {
	n := 0
	if detect {
		n++
	}
	switch {
	case k <= 0:
		return n
	case !d.opts.Contract.lettered() || d.binaryRow(k):
		n += k
		if d.opts.Debias == debias.Contextual {
			n += k * len(debias.ContentFreeEvidence)
		}
		return n
	case d.shortlistRow(k):
		return n + 1 + d.opts.shortlisted(k) // the state's embedding, the kept options' binary prompts
	case k > contract.MaxOptions:
		sizes, keep := knockout.Sizes(k)
		for _, s := range sizes {
			n += d.rowPrompts(s, false)
		}
		return n + d.rowPrompts(min(len(sizes)*keep, contract.MaxOptions), false)
	}
	switch method := d.rowMethod(d.opts.Debias, k); {
	case method == debias.Cyclic, method == debias.PriDe && d.opts.Permute > 1:
		return n + len(debias.Shifts(k, d.opts.Permute))
	}
	return n + 1
}

// questionRow is the row a Choice or Score decides: the state as evidence, the instructions as
// criterion, the criteria (or levels "0" … "n−1") as options.
func questionRow(name string, state any, q Question) (contract.Row, error) {
	if name == "" {
		return contract.Row{}, fmt.Errorf("%w: an empty name", ErrQuestion)
	}
	row := contract.Row{ID: name, State: state}
	var instructions any
	switch q := q.(type) {
	case Choice:
		instructions = q.Instructions
		seen := map[string]bool{}
		for _, c := range q.Criteria {
			if seen[c.Name] {
				return row, fmt.Errorf("%w: the choice %q is given twice", ErrQuestion, c.Name)
			}
			seen[c.Name] = true
			desc, err := questionText(c.Description)
			if err != nil {
				return row, fmt.Errorf("%w: the choice %q: %w", ErrQuestion, c.Name, err)
			}
			if c.Description == nil {
				desc = c.Name
			}
			row.Options = append(row.Options, contract.Option{ID: c.Name, Description: desc})
		}
	case *Choice:
		return questionRow(name, state, *q)
	case Score:
		instructions = q.Instructions
		for i, l := range q.Levels {
			desc, err := questionText(l)
			if err != nil {
				return row, fmt.Errorf("%w: level %d: %w", ErrQuestion, i, err)
			}
			row.Options = append(row.Options, contract.Option{ID: strconv.Itoa(i), Description: desc})
		}
	case *Score:
		return questionRow(name, state, *q)
	case nil:
		return row, fmt.Errorf("%w: no question", ErrQuestion)
	default:
		return row, fmt.Errorf("%w: the type %q is not answered here (choice, score and noul are)", ErrQuestion, q.Type())
	}
	if len(row.Options) == 0 {
		return row, fmt.Errorf("%w: no criteria", ErrQuestion)
	}
	var err error
	if row.Question, err = questionText(instructions); err != nil {
		return row, fmt.Errorf("%w: instructions: %w", ErrQuestion, err)
	}
	return row, row.Validate()
}

// questionText is the text a question's value is written as in a prompt: a string as it is,
// nil as "", a JSON object or array as Python's json.dumps writes it.
func questionText(v any) (string, error) {
	switch v := v.(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	}
	return pyjson.String(v)
}

// answerOf turns a question's Result into its Answer.
func answerOf(q Question, res *Result) *Answer {
	a := &Answer{Type: q.Type(), Result: res}
	if a.Type == "noul" {
		a.Noul = res.YesNo.PYes
		if c := res.Calibration; c != nil && len(c.Probabilities) == 1 {
			a.Noul = c.Probabilities[0]
		}
		return a
	}
	ids, probs := res.distribution()
	a.Probabilities = make(map[string]float64, len(ids))
	top := 0.0
	for i, id := range ids {
		a.Probabilities[id] = probs[i]
		top = max(top, probs[i])
	}
	a.Confidence = 1
	if k := float64(len(ids)); k > 1 {
		a.Confidence = min(1, max(0, (top-1/k)/(1-1/k)))
	}
	switch a.Type {
	case "choice":
		a.Choice = res.Chosen
	case "score":
		var levels []any
		switch q := q.(type) {
		case Score:
			levels = q.Levels
		case *Score:
			levels = q.Levels
		}
		a.Legend = make(map[string]any, len(levels))
		for i, l := range levels {
			a.Legend[strconv.Itoa(i)] = l
			a.Score += float64(i) * a.Probabilities[strconv.Itoa(i)]
		}
	}
	return a
}

// distribution is the probability of every option of the result's row, in row order, as its
// choice was made: the knockout's distribution, else the calibrated probabilities, else the
// debiased ones, else the raw ones; under the binary contract the candidates' p_yes (or their
// debiased or calibrated values) normalised to sum to 1.
func (res *Result) distribution() (ids []string, probs []float64) {
	switch {
	case res.Knockout != nil || res.Shortlist != nil:
		dist := res.ManyDistribution()
		for _, o := range dist {
			ids, probs = append(ids, o.ID), append(probs, o.Probability)
		}
		if c := res.Calibration; c != nil && len(c.Probabilities) == len(probs) {
			probs = slices.Clone(c.Probabilities)
		}
		return ids, probs
	case res.Candidates != nil:
		for _, c := range res.Candidates {
			ids, probs = append(ids, c.ID), append(probs, c.PYes)
		}
	default:
		for _, o := range res.Options {
			ids, probs = append(ids, o.ID), append(probs, o.Probability)
		}
	}
	if db := res.Debias; db != nil && len(db.Probabilities) == len(probs) {
		probs = slices.Clone(db.Probabilities)
	}
	if c := res.Calibration; c != nil && len(c.Probabilities) == len(probs) {
		probs = slices.Clone(c.Probabilities)
	}
	if res.Candidates != nil {
		total := 0.0
		for _, p := range probs {
			total += p
		}
		for i := range probs {
			if total > 0 {
				probs[i] /= total
			} else {
				probs[i] = 1 / float64(len(probs))
			}
		}
	}
	return ids, probs
}
