package batch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/internal/jsonl"
)

// DefaultWindow is Config.Window's default: rows decided at once.
const DefaultWindow = 32

// Config configures Run.
type Config struct {
	// Window is how many rows are decided at once (read ahead and handed to the Decider
	// together, so it can share their prefixes); 0 means DefaultWindow. Results stay in input
	// order whatever it is.
	Window int
	// Shard is the part of the input to decide (the zero Shard: all of it).
	Shard Shard
	// Skip, when set, reports the input lines already done (Resume.Skip); such a line gets no
	// record and counts as Summary.Skipped. An error of Skip stops the run.
	Skip func(line []byte, lineNo int) (bool, error)
	// Decided holds rows decided beforehand, by input line (PriDe's estimation sample:
	// EstimatePrior, Job): their records are these outcomes. An Outcome with neither a
	// Result nor an error is decided as usual.
	Decided map[int]gojev.Outcome
	// Encode turns one record (a Record or an ErrorRecord) into one whole line; nil writes
	// JSON lines (RecordLine's).
	Encode func(rec any) ([]byte, error)
	// OnRecord, when set, is called from Run's goroutine after each input line of the shard
	// is written or skipped, in input order, with the record (nil for a skipped line) and the
	// summary so far: for progress bars and early warnings.
	OnRecord func(rec any, sum *Summary)
}

// Summary is what a run's records add up to: the figures jev decide prints at its end.
type Summary struct {
	// Rows is the input lines of the shard written (decisions and error records); Skipped
	// those a resumed run found done.
	Rows, Decided, Errors, Skipped int
	// Typed counts the decisions that are typed rows' (AnswersRecord): each labelled answer of
	// one counts in Labelled and Correct as a labelled decision does.
	Typed int
	// Labelled decisions, and those right; RawCorrect those whose raw choice (under bias
	// control: Debiased) was right.
	Labelled, Correct, RawCorrect int
	Debiased                      bool
	// Abstained decisions; AnsweredLabelled and AnsweredCorrect the labelled ones not
	// abstained, and those right. Flagged: rows the injection detector flagged.
	Abstained, AnsweredLabelled, AnsweredCorrect, Flagged int
	// PromptTokens is what a no-reuse run decodes for the decisions (every prompt counted).
	PromptTokens int
	// Letters counts the chosen letters of lettered decisions with two or more options
	// (knockout rows aside: their letter is a pass's); Lettered is their sum.
	Letters  map[string]int
	Lettered int
	// Elapsed is Run's wall time.
	Elapsed time.Duration
	// Served are the label-free statistics of the decisions a calibration profile calibrated
	// (direct contract), and Shift their comparison with the profile's fitting rows
	// (calibrate.Compare; Job.Run sets it when the profile keeps those rows' statistics).
	Served calibrate.RowStats
	Shift  *calibrate.Shift
}

// Add counts one decision.
func (s *Summary) Add(res *gojev.Result) {
	s.Rows++
	s.Decided++
	s.PromptTokens += res.Stats.PromptTokens
	if res.Abstained {
		s.Abstained++
	}
	if res.Suspect != nil && res.Suspect.Flagged {
		s.Flagged++
	}
	if res.Debias != nil {
		s.Debiased = true
	}
	if res.Calibration != nil && res.Candidates == nil && res.Knockout == nil && res.Shortlist == nil {
		probs, chosen := make([]float64, len(res.Options)), -1
		for i, o := range res.Options {
			probs[i] = o.Probability
			if o.ID == res.Chosen {
				chosen = i
			}
		}
		if res.Debias != nil && len(res.Debias.Probabilities) == len(probs) {
			probs = res.Debias.Probabilities
		}
		s.Served.Add(probs, chosen)
	}
	if res.Correct != nil {
		s.Labelled++
		if *res.Correct {
			s.Correct++
		}
		if !res.Abstained {
			s.AnsweredLabelled++
			if *res.Correct {
				s.AnsweredCorrect++
			}
		}
		if res.Debias != nil && res.Debias.RawCorrect != nil && *res.Debias.RawCorrect {
			s.RawCorrect++
		}
	}
	if res.ChosenLetter != "" && len(res.Options) > 1 && res.Knockout == nil {
		if s.Letters == nil {
			s.Letters = map[string]int{}
		}
		s.Letters[res.ChosenLetter]++
		s.Lettered++
	}
}

// addAnswers counts a typed row: one decision, and each labelled answer as a labelled decision
// (right when its Correct is).
func (s *Summary) addAnswers(r *AnswersRecord) {
	s.Rows++
	s.Decided++
	s.Typed++
	s.PromptTokens += r.Usage.InputTokens
	for _, a := range r.Answers {
		if a.Correct == nil {
			continue
		}
		s.Labelled++
		s.AnsweredLabelled++
		if *a.Correct {
			s.Correct++
			s.AnsweredCorrect++
		}
	}
}

// AddError counts one error record.
func (s *Summary) AddError() {
	s.Rows++
	s.Errors++
}

// TopLetter returns the most chosen letter (the earliest on a tie) and its count.
func (s *Summary) TopLetter() (string, int) {
	best, n := "", -1
	for _, l := range contract.Letters {
		if c := s.Letters[string(l)]; c > n {
			best, n = string(l), c
		}
	}
	return best, n
}

// A letter skew: once skewMinRows lettered decisions are in, one letter holding skewShare of
// them says the model is choosing a position, not an option (jev decide warns; bias control,
// PriDe or permutations, is the remedy).
const (
	skewMinRows = 20
	skewShare   = 0.8
)

// Skewed returns the most chosen letter and its count, and whether it takes 80 % of at least
// 20 lettered decisions: the model is choosing a position, not an option.
func (s *Summary) Skewed() (letter string, n int, skewed bool) {
	letter, n = s.TopLetter()
	return letter, n, s.Lettered >= skewMinRows && float64(n) >= skewShare*float64(s.Lettered)
}

// beginFunc begins deciding one row (at input line lineNo) and returns the wait for its
// Result (gojev.Decider.Begin and Call.Wait); run calls it in input order, one row at a time,
// and the waits concurrently.
type beginFunc func(ctx context.Context, row contract.Row, lineNo int) (wait func() (*gojev.Result, error), err error)

// starter begins the lines of a run: rows of the contract (row), and typed rows (ask:
// gojev.Decider.BeginAsk and AskCall.Wait; nil refuses them), whose records name model.
type starter struct {
	row   beginFunc
	ask   func(ctx context.Context, state any, qs map[string]gojev.Question) (wait func() (map[string]*gojev.Answer, error), err error)
	model string
}

// Run decides the rows of in (JSONL, one row a line: contract.ParseRow, or a typed row of
// questions about a state, as the System One API asks them) through d and writes one record a
// line to out, in input order: a Record for a decision, an AnswersRecord for a typed row, an
// ErrorRecord for a line that cannot be decided (a bad row, a prompt too long), and the run
// goes on. Only the lines
// of cfg.Shard are decided, except those cfg.Skip reports done. Up to cfg.Window rows are
// decided at once; each record is written with a single Write as soon as every line before it
// is, so an interrupted run (a cancelled ctx, a kill) leaves only whole lines, the rows in
// flight dropped: continue it with Resume. The error is a read or write error, an error of
// cfg.Skip, or ctx's (wrapped, naming the line it stopped at).
//
// Rows are begun (gojev.Decider.Begin) in input order, so the Decider's scheduler, which serves
// the oldest request first, decodes them in that order and the records reach out as they
// finish; the lines are parsed and the rows waited for concurrently.
func Run(ctx context.Context, d *gojev.Decider, in io.Reader, out io.Writer, cfg Config) (Summary, error) {
	begin := func(ctx context.Context, row contract.Row, _ int) (func() (*gojev.Result, error), error) {
		c, err := d.Begin(ctx, row)
		if err != nil {
			return nil, err
		}
		return func() (*gojev.Result, error) { return c.Wait(ctx) }, nil
	}
	ask := func(ctx context.Context, state any, qs map[string]gojev.Question) (func() (map[string]*gojev.Answer, error), error) {
		c, err := d.BeginAsk(ctx, state, qs)
		if err != nil {
			return nil, err
		}
		return func() (map[string]*gojev.Answer, error) { return c.Wait(ctx) }, nil
	}
	return run(ctx, starter{row: begin, ask: ask, model: modelName(d)}, in, out, cfg)
}

// modelName names the model of d as typed rows' records do (the API's "model"): its file's
// name, or the runtime's (a server's URL).
func modelName(d *gojev.Decider) string {
	c := d.Check()
	if c.Model != nil {
		return filepath.Base(c.Model.Path)
	}
	return c.Backend
}

func run(ctx context.Context, begin starter, in io.Reader, out io.Writer, cfg Config) (Summary, error) {
	start := time.Now()
	var sum Summary
	window := cfg.Window
	if window <= 0 {
		window = DefaultWindow
	}
	encode := cfg.Encode
	if encode == nil {
		encode = jsonl.Encoder()
	}
	type slot struct {
		lineNo  int
		skipped bool
		rec     any
		done    chan struct{}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	slots := make(chan *slot, max(0, window-1))
	var readErr error // set before slots is closed
	go func() {
		defer close(slots)
		// begun is closed once the previous row has been begun (or needed no beginning): each
		// row waits for it before its own Begin, so rows enter the scheduler in input order.
		begun := make(chan struct{})
		close(begun)
		sc := jsonl.NewScanner(in)
		for sc.Scan() {
			l := sc.Line()
			if ctx.Err() != nil {
				return
			}
			if !cfg.Shard.Has(l.N) {
				continue
			}
			line := bytes.TrimSpace(l.Bytes)
			s := &slot{lineNo: l.N, done: make(chan struct{})}
			skip := false
			if cfg.Skip != nil {
				var err error
				if skip, err = cfg.Skip(line, l.N); err != nil {
					readErr = fmt.Errorf("resuming: %w", err)
					return
				}
			}
			if skip {
				s.skipped = true
				close(s.done)
			} else {
				prev, next := begun, make(chan struct{})
				begun = next
				go func() {
					defer close(s.done)
					s.rec = decideLine(ctx, begin, prev, next, cfg.Decided, line, l.N)
				}()
			}
			select {
			case slots <- s:
			case <-ctx.Done():
				<-s.done
				return
			}
		}
		if err := sc.Err(); err != nil {
			readErr = fmt.Errorf("reading rows: %w", err)
		}
	}()
	drain := func() {
		cancel()
		for s := range slots {
			<-s.done
		}
	}
	finish := func(err error) (Summary, error) {
		sum.Elapsed = time.Since(start)
		return sum, err
	}
	for s := range slots {
		<-s.done
		if s.skipped {
			sum.Skipped++
			if cfg.OnRecord != nil {
				cfg.OnRecord(nil, &sum)
			}
			continue
		}
		if err := ctx.Err(); err != nil {
			// Interrupted mid-decision: the row is dropped, not half-written or counted.
			drain()
			return finish(fmt.Errorf("stopped at line %d: %w", s.lineNo, err))
		}
		rec, b, err := encodeRecord(encode, s.rec, s.lineNo)
		if err != nil {
			drain()
			return finish(err)
		}
		if _, err := out.Write(b); err != nil {
			drain()
			return finish(fmt.Errorf("writing results: %w", err))
		}
		switch r := rec.(type) {
		case Record:
			sum.Add(r.Result)
		case AnswersRecord:
			sum.addAnswers(&r)
		default:
			sum.AddError()
		}
		if cfg.OnRecord != nil {
			cfg.OnRecord(rec, &sum)
		}
	}
	if readErr != nil {
		return finish(readErr)
	}
	return finish(ctx.Err())
}

// decideLine turns one input line into its record: the decision (decided now, or beforehand
// in decided), or an error record. It parses the line, waits for prev (the previous line
// begun), begins its row, closes next and waits for the result; next is closed on every path.
func decideLine(ctx context.Context, begin starter, prev <-chan struct{}, next chan<- struct{}, decided map[int]gojev.Outcome, line []byte, lineNo int) any {
	if isTypedRow(line) {
		return askLine(ctx, begin, prev, next, line, lineNo)
	}
	row, err := contract.ParseRow(line)
	<-prev
	var wait func() (*gojev.Result, error)
	if err == nil {
		if o, ok := decided[lineNo]; ok && (o.Result != nil || o.Err != nil) {
			wait = func() (*gojev.Result, error) { return o.Result, o.Err }
		} else {
			wait, err = begin.row(ctx, row, lineNo)
		}
	}
	close(next)
	if err == nil {
		var res *gojev.Result
		if res, err = wait(); err == nil {
			return Record{Result: res, Line: lineNo}
		}
	}
	return ErrorRecord{ID: row.IDJSON(), Line: lineNo, Error: err.Error()}
}

// askLine is decideLine for a typed row: its AnswersRecord, or an error record.
func askLine(ctx context.Context, begin starter, prev <-chan struct{}, next chan<- struct{}, line []byte, lineNo int) any {
	row, err := parseTypedRow(line)
	<-prev
	var wait func() (map[string]*gojev.Answer, error)
	switch {
	case err != nil:
	case begin.ask == nil:
		err = errors.New("typed rows (questions) are not decided here")
	default:
		qs := make(map[string]gojev.Question, len(row.questions))
		for _, q := range row.questions {
			qs[q.Name] = q.Question
		}
		wait, err = begin.ask(ctx, row.state, qs)
	}
	close(next)
	if err == nil {
		var answers map[string]*gojev.Answer
		if answers, err = wait(); err == nil {
			return answersRecord(row, lineNo, begin.model, answers)
		}
	}
	return ErrorRecord{ID: row.id, Line: lineNo, Error: err.Error()}
}

// RecordLine is the line a results file holds for the row at input line lineNo (id: the row's,
// contract.Row.IDJSON) decided as o: its Record, or an ErrorRecord for o.Err or for a Result
// JSON cannot encode (a NaN logit from a damaged model that still loads), as one JSON line with
// its newline. Run writes these lines; a program that decides rows its own way (jev bench)
// writes the same file with it.
func RecordLine(lineNo int, id json.RawMessage, o gojev.Outcome) []byte {
	var rec any = Record{Result: o.Result, Line: lineNo}
	if o.Err != nil || o.Result == nil {
		rec = ErrorRecord{ID: id, Line: lineNo, Error: cmp.Or(o.Err, errors.New("no result")).Error()}
	}
	_, b, _ := encodeRecord(jsonl.Encoder(), rec, lineNo) // JSON lines always encode an ErrorRecord
	return b
}

// encodeRecord encodes a record with encode; a record encode fails on becomes the
// unencodableRecord that replaces it. It returns the record written and its bytes.
func encodeRecord(encode func(any) ([]byte, error), rec any, lineNo int) (any, []byte, error) {
	b, err := encode(rec)
	if err != nil {
		rec = unencodableRecord(rec, lineNo, err)
		b, err = encode(rec)
	}
	return rec, b, err
}

// unencodableRecord is the error record that replaces a record JSON cannot encode (NaN logits
// from a damaged model that still loads), keeping its id.
func unencodableRecord(rec any, lineNo int, err error) ErrorRecord {
	var id json.RawMessage
	switch r := rec.(type) {
	case Record:
		id = r.ID
	case *gojev.Result:
		id = r.ID
	case ErrorRecord:
		id = r.ID
	case AnswersRecord:
		id = r.ID
	}
	if !json.Valid(id) {
		id = json.RawMessage("null")
	}
	return ErrorRecord{ID: id, Line: lineNo, Error: fmt.Sprintf("cannot write the result: %v", err)}
}
