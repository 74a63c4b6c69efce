package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/internal/jsonl"
)

// textLines is the encoder (batch.Config.Encode, batch.Job.Encode) of records for a person, as jev decide
// prints them on a terminal: one line per row with its id, the chosen option, its probability
// (p=, p_yes= for binary; p_cal=, p_yes_cal= when a calibration profile set it), the letter or
// the knockout's passes, "suspect" and "abstained" marks and, when the row is labelled, ✓ or ✗
// (with the label when wrong); under bias control the raw choice when it differs. A typed row
// reads "id  name=answer …": a choice's name (and its confidence), a score's expected level, a
// noul's P(yes), each with ✓ or ✗ when labelled. An
// batch.ErrorRecord reads "id  error (line N): …"; a promptRecord is a "### id" header over its
// prompt; any other value is a JSON line. color adds ANSI colours to the marks (a terminal).
// A Result JSON cannot encode (a NaN) is an error, as with JSON lines.
func textLines(color bool) func(rec any) ([]byte, error) {
	mark := func(ok bool) string {
		switch {
		case ok && color:
			return "\033[32m✓\033[0m"
		case ok:
			return "✓"
		case color:
			return "\033[31m✗\033[0m"
		}
		return "✗"
	}
	return func(rec any) ([]byte, error) {
		var b strings.Builder
		if lr, ok := rec.(batch.Record); ok {
			rec = lr.Result
		}
		switch r := rec.(type) {
		case *gojev.Result:
			if err := checkEncodable(r); err != nil {
				return nil, err
			}
			what := "p"
			if r.Candidates != nil {
				what = "p_yes"
			}
			if r.Calibration != nil {
				what += "_cal" // the profile's calibrated probability, not the model's
			}
			fmt.Fprintf(&b, "%-12s %-20s %s=%.3f", idText(r.ID), r.Chosen, what, r.Probability)
			switch {
			case r.Knockout != nil:
				fmt.Fprintf(&b, " (knockout, %d passes)", len(r.Knockout.Passes))
			case r.Shortlist != nil:
				fmt.Fprintf(&b, " (shortlist: %d of %d options read)", r.Shortlist.K, len(r.Shortlist.Scores))
			case r.ChosenLetter != "":
				fmt.Fprintf(&b, " (%s)", r.ChosenLetter)
			}
			if r.Suspect != nil && r.Suspect.Flagged {
				fmt.Fprintf(&b, "  suspect (p_yes %.2f)", r.Suspect.PYes)
			}
			if r.Abstained {
				b.WriteString("  abstained")
			}
			if r.Correct != nil {
				b.WriteString("  " + mark(*r.Correct))
				if !*r.Correct {
					b.WriteString(" label " + r.Label)
				}
			}
			if r.Debias != nil && r.Debias.RawChosen != r.Chosen {
				fmt.Fprintf(&b, "  (%s; raw: %s)", r.Debias.Method, r.Debias.RawChosen)
			}
		case batch.AnswersRecord:
			fmt.Fprintf(&b, "%-12s", idText(r.ID))
			for _, a := range r.Answers {
				switch a.Type {
				case "choice":
					fmt.Fprintf(&b, "  %s=%s (%.3f)", a.Name, a.Choice, a.Confidence)
				case "score":
					fmt.Fprintf(&b, "  %s=%.2f", a.Name, a.Score)
				case "noul":
					fmt.Fprintf(&b, "  %s=%.3f", a.Name, a.Noul)
				}
				if a.Correct != nil {
					b.WriteString(" " + mark(*a.Correct))
					if !*a.Correct {
						fmt.Fprintf(&b, " label %v", a.Label)
					}
				}
			}
		case batch.ErrorRecord:
			fmt.Fprintf(&b, "%-12s error (line %d): %s", idText(r.ID), r.Line, r.Error)
		case promptRecord:
			fmt.Fprintf(&b, "### %s  %s  %d tokens  sha256 %s\n%s\n", idText(r.ID), r.PromptVersion, r.NPromptTokens, r.PromptSHA256, r.Prompt)
		default:
			return jsonl.Encoder()(rec)
		}
		b.WriteByte('\n')
		return []byte(b.String()), nil
	}
}

// checkEncodable fails for a record JSON cannot encode (a NaN from a damaged model), so the
// text path turns it into the same error record as the JSONL path.
func checkEncodable(rec any) error {
	_, err := json.Marshal(rec)
	return err
}

// idText prints a row id: a string without its quotes, a number as it is.
func idText(id json.RawMessage) string {
	var s string
	if json.Unmarshal(id, &s) == nil {
		return s
	}
	if len(id) == 0 {
		return "null"
	}
	return string(id)
}
