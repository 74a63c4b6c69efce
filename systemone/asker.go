package systemone

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

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

// VersionAliases are the jev-<version> names System One clients send by default (jevkit's
// tools pin jev-1.13.0; TypeSafe's releases are also asked for by minor version): a gojev
// server answers them, and any other name of the form jev-<digits>[.<digits>...], with its
// own model, and lists these in GET /v1/models as aliases.
var VersionAliases = []string{"jev-1.13", "jev-1.13.0"}

// versionName matches jev-<version>: jev-1, jev-1.13, jev-1.13.0.
var versionName = regexp.MustCompile(`^jev-[0-9]+(\.[0-9]+)*$`)

// Local answers System One requests with a Decider in this process (Decider.Ask): the
// questions of one request are decided together, and concurrent requests share the Decider's
// batching.
type Local struct {
	Decider *gojev.Decider
	// Model is the name answers carry (what really answered; jev serve: the model's file
	// name), which requests may ask for, as they may DefaultModel, VersionAliases and any
	// jev-<version> name, and Aliases.
	Model   string
	Aliases []string
}

var _ Asker = (*Local)(nil)

// names are the model names l answers to, listed: Model, DefaultModel, VersionAliases, Aliases.
func (l *Local) names() []string {
	out := []string{l.Model}
	for _, n := range append(append([]string{DefaultModel}, VersionAliases...), l.Aliases...) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// serves reports whether a request for model is answered by l.
func (l *Local) serves(model string) bool {
	return slices.Contains(l.names(), model) || versionName.MatchString(model)
}

// unknown is the error of a request for a model l does not serve.
func (l *Local) unknown(model string) error {
	return fmt.Errorf("%w %q: this server answers to %s, and any jev-<version> name", ErrUnknownModel, model, strings.Join(quoted(l.names()), ", "))
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = strconv.Quote(n)
	}
	return out
}

// Ask decides the request's questions (gojev.Decider.Ask) and returns their answers in the
// request's order. A request for a model l does not serve wraps ErrUnknownModel; a question the
// Decider refuses (malformed, a prompt too long for n_ctx, content with special-token text, a
// noul question the model cannot answer) is a ValidationErrors naming it, and then no question
// of the request was decoded; ctx's error and gojev.ErrClosed are returned wrapped.
func (l *Local) Ask(ctx context.Context, req *Request) (*Response, error) {
	c, qs, err := l.begin(ctx, req)
	if err != nil {
		return nil, err
	}
	answers, err := c.Wait(ctx)
	if err != nil {
		return nil, validation(err, qs)
	}
	return ResponseOf(l.Model, req.Questions, answers), nil
}

// begin checks the model and the question names, and begins the Ask (every question checked
// and its prompts prepared before any is queued); it returns the call and the questions by
// name. Errors are Ask's.
func (l *Local) begin(ctx context.Context, req *Request) (*gojev.AskCall, map[string]gojev.Question, error) {
	if !l.serves(req.Model) {
		return nil, nil, l.unknown(req.Model)
	}
	qs := make(map[string]gojev.Question, len(req.Questions))
	for _, q := range req.Questions {
		if _, dup := qs[q.Name]; dup {
			return nil, nil, ValidationErrors{{Loc: []any{"body", "questions", q.Name}, Msg: "the question name is given twice", Type: "duplicate"}}
		}
		qs[q.Name] = q.Question
	}
	c, err := l.Decider.BeginAsk(ctx, req.State, qs)
	if err != nil {
		return nil, qs, validation(err, qs)
	}
	return c, qs, nil
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
	if err == nil {
		return nil
	}
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
