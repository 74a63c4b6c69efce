package systemone

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/pyjson"
)

// Asker answers System One requests. Local answers them in this process with a gojev.Decider
// and Client asks a server over HTTP, so a program written against Asker moves between the two
// by changing one line. Both are safe for concurrent use.
//
// Errors: ValidationErrors for a request the API refuses as invalid (HTTP 422: a malformed
// question, a prompt longer than n_ctx, an unsupported type); ErrUnknownModel for a model the
// server does not serve (404); Client adds *APIError for any other failed HTTP response.
type Asker interface {
	Ask(ctx context.Context, req *Request) (*Response, error)
}

// ErrUnknownModel: the request names a model the server does not serve (HTTP 404).
var ErrUnknownModel = errors.New("systemone: unknown model")

// Local answers System One requests with a Decider in this process (Decider.Ask): the
// questions of one request are decided together, and concurrent requests share the Decider's
// batching.
type Local struct {
	Decider *gojev.Decider
	// Model is the name answers carry and requests may ask for, besides DefaultModel (jev
	// serve: the model's file name).
	Model string
}

var _ Asker = (*Local)(nil)

// Ask decides the request's questions (gojev.Decider.Ask) and returns their answers in the
// request's order. A request for another model than l.Model or DefaultModel wraps
// ErrUnknownModel; a question the Decider refuses (malformed, a prompt too long for n_ctx,
// content with special-token text, a noul question the model cannot answer) is a
// ValidationErrors naming it; ctx's error and gojev.ErrClosed are returned wrapped.
func (l *Local) Ask(ctx context.Context, req *Request) (*Response, error) {
	if req.Model != DefaultModel && req.Model != l.Model {
		return nil, fmt.Errorf("%w: %q (this server answers to %q and %q)", ErrUnknownModel, req.Model, DefaultModel, l.Model)
	}
	qs := make(map[string]gojev.Question, len(req.Questions))
	for _, q := range req.Questions {
		if _, dup := qs[q.Name]; dup {
			return nil, ValidationErrors{{Loc: []any{"body", "questions", q.Name}, Msg: "the question name is given twice", Type: "duplicate"}}
		}
		qs[q.Name] = q.Question
	}
	answers, err := l.Decider.Ask(ctx, req.State, qs)
	if err != nil {
		return nil, validation(err, qs)
	}
	return ResponseOf(l.Model, req.Questions, answers), nil
}

// ResponseOf is the API's response for questions (in their order) and Decider.Ask's answers to
// them: each answer in the API's shape, probabilities and legend in the order of its question's
// criteria or levels, and the usage (every prompt's tokens; one answer token a prompt).
func ResponseOf(model string, questions []Named, answers map[string]*gojev.Answer) *Response {
	out := &Response{Model: model}
	for _, q := range questions {
		a := answers[q.Name]
		out.Answers = append(out.Answers, NamedAnswer{Name: q.Name, Answer: wireAnswer(q.Question, a)})
		out.Usage.InputTokens += a.Result.Stats.PromptTokens
		out.Usage.OutputTokens += prompts(a.Result)
	}
	return out
}

// validation turns an error of Decider.Ask about one question into the API's ValidationErrors
// where the request is at fault; other errors are returned as they are.
func validation(err error, qs map[string]gojev.Question) error {
	var qe *gojev.QuestionError
	if !errors.As(err, &qe) {
		return err
	}
	loc := []any{"body", "questions", qe.Name}
	if q := qs[qe.Name]; q != nil {
		loc = append(loc, q.Type())
	}
	var tl *backend.PromptTooLongError
	switch {
	case errors.As(err, &tl):
		return ValidationErrors{{Loc: loc, Msg: fmt.Sprintf("the state and question make a prompt of %d tokens, longer than this server's n_ctx of %d tokens", tl.NTokens, tl.NCtx), Type: "context_length_exceeded"}}
	case errors.Is(err, debias.ErrNoPrior):
		return ValidationErrors{{Loc: loc, Msg: "this server controls position bias with a PriDe prior that has no entry for this many criteria: " + qe.Err.Error(), Type: "unsupported"}}
	case errors.Is(err, contract.ErrBinarySlot):
		return ValidationErrors{{Loc: loc, Msg: "this model cannot spell yes or no as one token, so it cannot answer noul questions: " + qe.Err.Error(), Type: "unsupported"}}
	case errors.Is(err, gojev.ErrQuestion), errors.Is(err, contract.ErrRow), errors.Is(err, backend.ErrSpecialText),
		errors.Is(err, contract.ErrNoOptions), errors.Is(err, contract.ErrTooManyRowOptions), errors.Is(err, backend.ErrPromptTooLong):
		return ValidationErrors{{Loc: loc, Msg: qe.Err.Error(), Type: "value_error"}}
	}
	return err
}

// wireAnswer is a gojev.Answer as the API writes it: probabilities and legend in the order
// of the question's criteria or levels.
func wireAnswer(q gojev.Question, a *gojev.Answer) Answer {
	w := Answer{Type: a.Type, Choice: a.Choice, Score: a.Score, Noul: a.Noul, Confidence: a.Confidence,
		PromptVersion: a.Result.PromptVersion, PromptSHA256: a.Result.PromptSHA256}
	var keys []string
	switch p := q.(type) {
	case *gojev.Choice:
		q = *p
	case *gojev.Score:
		q = *p
	}
	switch q := q.(type) {
	case gojev.Choice:
		for _, c := range q.Criteria {
			keys = append(keys, c.Name)
		}
	case gojev.Score:
		for i, l := range q.Levels {
			keys = append(keys, strconv.Itoa(i))
			w.Legend = append(w.Legend, pyjson.Member{Key: strconv.Itoa(i), Value: l})
		}
	}
	for _, k := range keys {
		w.Probabilities = append(w.Probabilities, pyjson.Member{Key: k, Value: a.Probabilities[k]})
	}
	return w
}

// prompts counts the prompts a result read one answer token from.
func prompts(res *gojev.Result) int {
	n := 1
	switch {
	case res.Knockout != nil:
		n = len(res.Knockout.Passes)
	case res.Candidates != nil:
		n = len(res.Candidates)
	case res.Debias != nil:
		n += len(res.Debias.Permutations)
	}
	if res.Suspect != nil {
		n++
	}
	return n
}
