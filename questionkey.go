package gojev

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/gojev/gojev/pyjson"
)

// QuestionJSON is a question as System One's API writes it: {"type", "instructions",
// "criteria"}, criteria a Choice's names to descriptions, a Score's levels, a Noul's "true"
// and "false" (left out when neither is said). Errors: ErrQuestion for a value that is not a
// Choice, Score or Noul (or a pointer to one).
func QuestionJSON(q Question) (pyjson.Object, error) {
	switch q := q.(type) {
	case Choice:
		crit := make(pyjson.Object, len(q.Criteria))
		for i, c := range q.Criteria {
			crit[i] = pyjson.Member{Key: c.Name, Value: c.Description}
		}
		return pyjson.Object{{Key: "type", Value: "choice"}, {Key: "instructions", Value: q.Instructions}, {Key: "criteria", Value: crit}}, nil
	case Score:
		return pyjson.Object{{Key: "type", Value: "score"}, {Key: "instructions", Value: q.Instructions}, {Key: "criteria", Value: q.Levels}}, nil
	case Noul:
		o := pyjson.Object{{Key: "type", Value: "noul"}, {Key: "instructions", Value: q.Instructions}}
		if q.True != nil || q.False != nil {
			o = append(o, pyjson.Member{Key: "criteria", Value: pyjson.Object{{Key: "true", Value: q.True}, {Key: "false", Value: q.False}}})
		}
		return o, nil
	case *Choice:
		return QuestionJSON(*q)
	case *Score:
		return QuestionJSON(*q)
	case *Noul:
		return QuestionJSON(*q)
	}
	return nil, fmt.Errorf("%w: %T is not a choice, score or noul question", ErrQuestion, q)
}

// QuestionSHA256 is a question's key, 64 hex digits: the sha256 of QuestionJSON's bytes as
// Python's json.dumps writes them (pyjson). Two questions share it exactly when their type,
// instructions and criteria (or levels) are the same, in the same order; the state and the
// question's name are not part of it. A calibration profile's scoring QuestionScoring(key),
// fitted by jev calibrate on a question's labelled answers, calibrates every later answer to
// that question. Errors are QuestionJSON's, and pyjson's for a value JSON cannot hold.
func QuestionSHA256(q Question) (string, error) {
	o, err := QuestionJSON(q)
	if err != nil {
		return "", err
	}
	b, err := pyjson.Marshal(o)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrQuestion, err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}
