package systemone

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/pyjson"
)

// DefaultModel is the alias a System One client asks for when it names no model, and that
// every gojev server answers to.
const DefaultModel = "jev-latest"

// Request is one POST /v1/systemone body: named typed questions about one state.
type Request struct {
	// Model names the model (DefaultModel, or a name from GET /v1/models).
	Model string
	// State is what every question is about: a string, or a JSON object or array (a decoded
	// request keeps its objects' key order: pyjson.Object).
	State any
	// Questions are the named questions, in the order the request lists them.
	Questions []Named
}

// Named is one question of a Request under the name its answer comes back by.
type Named struct {
	Name string
	gojev.Question
}

// Answer is one question's answer as the API writes it: its type's fields only (choice:
// choice, confidence, probabilities; score: score, confidence, legend, probabilities; noul:
// noul), and the prompt_version and prompt_sha256 of the prompt that decided it.
type Answer struct {
	Type       string
	Choice     string
	Score      float64
	Noul       float64
	Confidence float64
	// Legend and Probabilities are ordered as the question listed its criteria or levels.
	Legend        pyjson.Object
	Probabilities pyjson.Object
	PromptVersion string
	PromptSHA256  string
	// Label and Correct are a labelled question's (batch records of typed rows, not the API):
	// the label as the row gave it and whether the answer matches it; nil without a label.
	Label   any
	Correct *bool
	// YesNo is a noul answer's raw readout (batch records, not the API): every single-token
	// spelling of yes and no with its log-probability, and the pooled p_yes before any
	// calibration, for fitting and measuring offline.
	YesNo *contract.BinaryScore
	// QuestionSHA256 is the question's key (gojev.QuestionSHA256; batch records, not the API):
	// jev calibrate fits a calibration per question from it.
	QuestionSHA256 string
	// Scoring and Scores are the answer's calibration input (batch records, not the API): the
	// scoring its scores belong to and the scores a calibration map reads
	// (gojev.Result.CalibrationScoring, CalibrationScores), so that jev calibrate fits the
	// question's own map from labelled records without decoding again.
	Scoring string
	Scores  []float64
}

// Usage counts a request's tokens: InputTokens the prompt tokens its questions were decided
// on (every prompt counted whole, as a run without prefix reuse decodes them), OutputTokens the
// answers read (one next-token read-out a prompt).
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Response is a POST /v1/systemone answer: the answers by question name, in the request's
// order, and the usage.
type Response struct {
	Model   string
	Answers []NamedAnswer
	Usage   Usage
}

// NamedAnswer is one answer of a Response under its question's name.
type NamedAnswer struct {
	Name string
	Answer
}

// MarshalJSON writes the answer's fields after its "name" (without it, the embedded Answer's
// MarshalJSON would be promoted and drop the name).
func (n NamedAnswer) MarshalJSON() ([]byte, error) {
	b, err := n.Answer.MarshalJSON()
	if err != nil {
		return nil, err
	}
	name, err := json.Marshal(n.Name)
	if err != nil {
		return nil, err
	}
	out := append([]byte(`{"name":`), name...)
	if len(b) > 2 { // {"type": ...}
		out = append(append(out, ','), b[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (n *NamedAnswer) UnmarshalJSON(b []byte) error {
	var w struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	n.Name = w.Name
	return n.Answer.UnmarshalJSON(b)
}

// Get returns the answer to the question named name.
func (r *Response) Get(name string) (Answer, bool) {
	for _, a := range r.Answers {
		if a.Name == name {
			return a.Answer, true
		}
	}
	return Answer{}, false
}

// Model is one entry of GET /v1/models.
type Model struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	ReleaseDate string `json:"release_date"`
}

// ModelList is GET /v1/models's body.
type ModelList struct {
	Models []Model `json:"models"`
}

// ValidationError is one entry of a 422 body's "detail", as FastAPI writes it: where (Loc,
// "body" then field names), what (Msg) and its kind (Type: "missing", "string_type", ...).
type ValidationError struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// ValidationErrors is a request refused as invalid (HTTP 422): every problem found.
type ValidationErrors []ValidationError

func (v ValidationErrors) Error() string {
	parts := make([]string, len(v))
	for i, e := range v {
		var loc []string
		for _, l := range e.Loc {
			if l != "body" {
				loc = append(loc, fmt.Sprint(l))
			}
		}
		parts[i] = e.Msg
		if len(loc) > 0 {
			parts[i] = strings.Join(loc, ".") + ": " + e.Msg
		}
	}
	return "systemone: invalid request: " + strings.Join(parts, "; ")
}

// MarshalJSON writes the request as the API reads it (a value receiver: a Request and a
// *Request marshal alike).
func (r Request) MarshalJSON() ([]byte, error) {
	qs := make(pyjson.Object, len(r.Questions))
	for i, q := range r.Questions {
		v, err := gojev.QuestionJSON(q.Question)
		if err != nil {
			return nil, fmt.Errorf("question %q: %w", q.Name, err)
		}
		qs[i] = pyjson.Member{Key: q.Name, Value: v}
	}
	return json.Marshal(pyjson.Object{{Key: "model", Value: r.Model}, {Key: "state", Value: r.State}, {Key: "questions", Value: qs}})
}

// MarshalJSON writes the answer with its type's fields only: every number a JSON number.
func (a Answer) MarshalJSON() ([]byte, error) {
	o := pyjson.Object{{Key: "type", Value: a.Type}}
	switch a.Type {
	case "choice":
		o = append(o, pyjson.Member{Key: "choice", Value: a.Choice}, pyjson.Member{Key: "confidence", Value: a.Confidence},
			pyjson.Member{Key: "probabilities", Value: a.Probabilities})
	case "score":
		o = append(o, pyjson.Member{Key: "score", Value: a.Score}, pyjson.Member{Key: "confidence", Value: a.Confidence},
			pyjson.Member{Key: "legend", Value: a.Legend}, pyjson.Member{Key: "probabilities", Value: a.Probabilities})
	case "noul":
		o = append(o, pyjson.Member{Key: "noul", Value: a.Noul})
	}
	if a.PromptVersion != "" {
		o = append(o, pyjson.Member{Key: "prompt_version", Value: a.PromptVersion}, pyjson.Member{Key: "prompt_sha256", Value: a.PromptSHA256})
	}
	if a.Label != nil {
		o = append(o, pyjson.Member{Key: "label", Value: a.Label})
	}
	if a.Correct != nil {
		o = append(o, pyjson.Member{Key: "correct", Value: *a.Correct})
	}
	if a.YesNo != nil {
		o = append(o, pyjson.Member{Key: "yes_no", Value: a.YesNo})
	}
	if a.QuestionSHA256 != "" {
		o = append(o, pyjson.Member{Key: "question_sha256", Value: a.QuestionSHA256})
	}
	if a.Scoring != "" {
		o = append(o, pyjson.Member{Key: "scoring", Value: a.Scoring}, pyjson.Member{Key: "scores", Value: a.Scores})
	}
	return json.Marshal(o)
}

// UnmarshalJSON reads an answer of any type; fields of other types are left zero.
func (a *Answer) UnmarshalJSON(b []byte) error {
	var w struct {
		Type          string                `json:"type"`
		Choice        string                `json:"choice"`
		Score         float64               `json:"score"`
		Noul          float64               `json:"noul"`
		Confidence    float64               `json:"confidence"`
		Legend        json.RawMessage       `json:"legend"`
		Probabilities json.RawMessage       `json:"probabilities"`
		PromptVersion string                `json:"prompt_version"`
		PromptSHA256  string                `json:"prompt_sha256"`
		Label         json.RawMessage       `json:"label"`
		Correct       *bool                 `json:"correct"`
		YesNo         *contract.BinaryScore `json:"yes_no"`
		Question      string                `json:"question_sha256"`
		Scoring       string                `json:"scoring"`
		Scores        []float64             `json:"scores"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*a = Answer{Type: w.Type, Choice: w.Choice, Score: w.Score, Noul: w.Noul, Confidence: w.Confidence,
		PromptVersion: w.PromptVersion, PromptSHA256: w.PromptSHA256, Correct: w.Correct, YesNo: w.YesNo, QuestionSHA256: w.Question,
		Scoring: w.Scoring, Scores: w.Scores}
	if len(w.Label) > 0 && string(w.Label) != "null" {
		var err error
		if a.Label, err = pyjson.Decode(w.Label); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		raw json.RawMessage
		dst *pyjson.Object
	}{{w.Legend, &a.Legend}, {w.Probabilities, &a.Probabilities}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		v, err := pyjson.Decode(f.raw)
		if err != nil {
			return err
		}
		o, ok := v.(pyjson.Object)
		if !ok {
			return fmt.Errorf("systemone: legend and probabilities are objects, got %s", f.raw)
		}
		for i, m := range o {
			if n, ok := m.Value.(json.Number); ok && f.dst == &a.Probabilities {
				p, err := n.Float64()
				if err != nil {
					return err
				}
				o[i].Value = p
			}
		}
		*f.dst = o
	}
	return nil
}

// MarshalJSON writes the response as the API does: answers in the request's order, by
// name (a value receiver: a Response and a *Response marshal alike).
func (r Response) MarshalJSON() ([]byte, error) {
	answers := make(pyjson.Object, len(r.Answers))
	for i, a := range r.Answers {
		answers[i] = pyjson.Member{Key: a.Name, Value: a.Answer}
	}
	return json.Marshal(pyjson.Object{{Key: "model", Value: r.Model}, {Key: "answers", Value: answers}, {Key: "usage", Value: r.Usage}})
}

// UnmarshalJSON reads a response, answers in the order the body lists them.
func (r *Response) UnmarshalJSON(b []byte) error {
	var w struct {
		Model   string          `json:"model"`
		Answers json.RawMessage `json:"answers"`
		Usage   *Usage          `json:"usage"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	if w.Usage == nil {
		return errors.New("systemone: the response has no usage")
	}
	v, err := pyjson.Decode(w.Answers)
	if err != nil {
		return err
	}
	o, ok := v.(pyjson.Object)
	if !ok {
		return errors.New("systemone: the response's answers are not an object")
	}
	*r = Response{Model: w.Model, Usage: *w.Usage}
	for _, m := range o {
		raw, err := json.Marshal(m.Value)
		if err != nil {
			return err
		}
		var a Answer
		if err := json.Unmarshal(raw, &a); err != nil {
			return fmt.Errorf("systemone: answer %q: %w", m.Key, err)
		}
		r.Answers = append(r.Answers, NamedAnswer{Name: m.Key, Answer: a})
	}
	return nil
}

// ParseRequest reads a POST /v1/systemone body as the API validates it: a JSON object with a
// model (a string), a state (a string, object or array) and questions (an object of at least
// one question, each an object whose "type" is choice, score or noul with that type's fields).
// Objects keep their key order (pyjson). What does not fit is a ValidationErrors naming every
// problem, as FastAPI's 422 detail does; a question of a type the API knows but gojev does not
// answer (box) and image assets are refused there too, type "unsupported".
func ParseRequest(body []byte) (*Request, error) {
	v, err := pyjson.Decode(body)
	if err != nil {
		var se *pyjson.SyntaxError
		pos := 0
		if errors.As(err, &se) {
			pos = se.Offset
		}
		return nil, ValidationErrors{{Loc: []any{"body", pos}, Msg: "JSON decode error: " + err.Error(), Type: "json_invalid"}}
	}
	if bad := nonFinite(v); bad != "" {
		return nil, ValidationErrors{{Loc: []any{"body"}, Msg: "JSON numbers must be finite, not " + bad, Type: "finite_number"}}
	}
	root, ok := v.(pyjson.Object)
	if !ok {
		return nil, ValidationErrors{{Loc: []any{"body"}, Msg: "Input should be a valid dictionary or object to extract fields from", Type: "model_attributes_type"}}
	}
	var errs ValidationErrors
	fail := func(msg, typ string, loc ...any) {
		errs = append(errs, ValidationError{Loc: append([]any{"body"}, loc...), Msg: msg, Type: typ})
	}
	req := &Request{}
	if m, ok := get(root, "model"); !ok {
		fail("Field required", "missing", "model")
	} else if s, ok := m.(string); !ok {
		fail("Input should be a valid string", "string_type", "model")
	} else {
		req.Model = s
	}
	if s, ok := get(root, "state"); !ok {
		fail("Field required", "missing", "state")
	} else if !isText(s) || s == nil {
		fail("Input should be a valid string, dictionary or list", "state_type", "state")
	} else {
		req.State = s
	}
	if a, ok := get(root, "assets"); ok && a != nil {
		fail("image assets need a vision-language model: this server decides text only", "unsupported", "assets")
	}
	qv, ok := get(root, "questions")
	qs, isObj := qv.(pyjson.Object)
	switch {
	case !ok:
		fail("Field required", "missing", "questions")
	case !isObj:
		fail("Input should be a valid dictionary", "dict_type", "questions")
	case len(qs) == 0:
		fail("Dictionary should have at least 1 item after validation, not 0", "too_short", "questions")
	}
	named, qerrs := parseQuestions(qs, []any{"questions"})
	errs = append(errs, qerrs...)
	if len(errs) > 0 {
		return nil, errs
	}
	req.Questions = named
	return req, nil
}

// ParseQuestions reads the named questions of an object as the API's "questions" (each an
// object whose "type" is choice, score or noul; members the API does not know are left out,
// as a "label" of a batch row). Problems are a ValidationErrors whose locations start at
// "questions".
func ParseQuestions(qs pyjson.Object) ([]Named, error) {
	named, errs := parseQuestions(qs, []any{"questions"})
	if len(errs) > 0 {
		return nil, errs
	}
	return named, nil
}

func parseQuestions(qs pyjson.Object, loc []any) ([]Named, ValidationErrors) {
	var errs ValidationErrors
	var named []Named
	for _, m := range qs {
		q, qerrs := parseQuestion(m.Value, append(slices.Clone(loc), m.Key))
		errs = append(errs, qerrs...)
		if q != nil {
			named = append(named, Named{Name: m.Key, Question: q})
		}
	}
	return named, errs
}

// parseQuestion reads one question at loc.
func parseQuestion(v any, loc []any) (gojev.Question, ValidationErrors) {
	var errs ValidationErrors
	at := func(more ...any) []any { return append(append([]any{"body"}, loc...), more...) }
	o, ok := v.(pyjson.Object)
	if !ok {
		return nil, ValidationErrors{{Loc: at(), Msg: "Input should be a valid dictionary or object to extract fields from", Type: "model_attributes_type"}}
	}
	t, _ := get(o, "type")
	typ, _ := t.(string)
	switch typ {
	case "choice", "score", "noul":
	case "box":
		return nil, ValidationErrors{{Loc: at("box"), Msg: "box questions locate things in images: this server decides text only (choice, score and noul)", Type: "unsupported"}}
	default:
		msg := "Unable to extract tag using discriminator 'type'"
		kind := "union_tag_not_found"
		if t != nil {
			msg, kind = fmt.Sprintf("Input tag %q found using 'type' does not match any of the expected tags: 'noul', 'choice', 'score', 'box'", fmt.Sprint(t)), "union_tag_invalid"
		}
		return nil, ValidationErrors{{Loc: at(), Msg: msg, Type: kind}}
	}
	instructions, _ := get(o, "instructions")
	if !isText(instructions) {
		errs = append(errs, ValidationError{Loc: at(typ, "instructions"), Msg: "Input should be a valid string, dictionary or list", Type: "instructions_type"})
	}
	crit, hasCrit := get(o, "criteria")
	switch typ {
	case "choice":
		c, ok := crit.(pyjson.Object)
		switch {
		case !hasCrit:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "Field required", Type: "missing"})
		case !ok:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "Input should be a valid dictionary", Type: "dict_type"})
		case len(c) == 0:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "a choice question needs at least one choice", Type: "too_short"})
		}
		q := gojev.Choice{Instructions: instructions}
		for _, m := range c {
			if !isText(m.Value) {
				errs = append(errs, ValidationError{Loc: at(typ, "criteria", m.Key), Msg: "Input should be a valid string, dictionary, list or null", Type: "criterion_type"})
			}
			q.Criteria = append(q.Criteria, gojev.Criterion{Name: m.Key, Description: m.Value})
		}
		if len(errs) == 0 {
			return q, nil
		}
	case "score":
		l, ok := crit.([]any)
		switch {
		case !hasCrit:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "Field required", Type: "missing"})
		case !ok:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "Input should be a valid list", Type: "list_type"})
		case len(l) == 0:
			errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "List should have at least 1 item after validation, not 0", Type: "too_short"})
		}
		for i, lv := range l {
			if !isText(lv) || lv == nil {
				errs = append(errs, ValidationError{Loc: at(typ, "criteria", i), Msg: "Input should be a valid string, dictionary or list", Type: "level_type"})
			}
		}
		if len(errs) == 0 {
			return gojev.Score{Instructions: instructions, Levels: l}, nil
		}
	case "noul":
		q := gojev.Noul{Instructions: instructions}
		if hasCrit && crit != nil {
			c, ok := crit.(pyjson.Object)
			if !ok {
				errs = append(errs, ValidationError{Loc: at(typ, "criteria"), Msg: "Input should be a valid dictionary or object to extract fields from", Type: "model_attributes_type"})
			}
			q.True, _ = get(c, "true")
			q.False, _ = get(c, "false")
			for _, k := range []string{"true", "false"} {
				if v, _ := get(c, k); !isText(v) {
					errs = append(errs, ValidationError{Loc: at(typ, "criteria", k), Msg: "Input should be a valid string, dictionary, list or null", Type: "criterion_type"})
				}
			}
		}
		if q.Instructions == nil && q.True == nil && q.False == nil && len(errs) == 0 {
			errs = append(errs, ValidationError{Loc: at(typ, "instructions"), Msg: "a noul question needs instructions or criteria", Type: "missing"})
		}
		if len(errs) == 0 {
			return q, nil
		}
	}
	return nil, errs
}

// get is an object's member named key.
func get(o pyjson.Object, key string) (any, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Value, true
		}
	}
	return nil, false
}

// isText reports whether v is what the API takes as text: a string, an object, an array, or
// null.
func isText(v any) bool {
	switch v.(type) {
	case nil, string, pyjson.Object, []any:
		return true
	}
	return false
}

// nonFinite returns the first NaN or Infinity literal in v ("" when none): Python's json.loads
// takes them, and an answer echoing one would not be JSON.
func nonFinite(v any) string {
	switch v := v.(type) {
	case json.Number:
		// NaN, Infinity, and a literal too large for a float64 (1e999), which Python reads as
		// infinity too; ParseFloat returns ±Inf with its range error then.
		if f, _ := strconv.ParseFloat(string(v), 64); math.IsInf(f, 0) || math.IsNaN(f) {
			return string(v)
		}
	case []any:
		for _, e := range v {
			if s := nonFinite(e); s != "" {
				return s
			}
		}
	case pyjson.Object:
		for _, m := range v {
			if s := nonFinite(m.Value); s != "" {
				return s
			}
		}
	}
	return ""
}
