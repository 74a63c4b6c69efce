package gojev

import (
	"math"
	"slices"

	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/debias"
)

// scoresOf are the scores a calibration map reads from a result, in row order: the debiased
// scores under bias control, else the raw ones (binary: p_yes values).
func scoresOf(res *Result) []float64 {
	if res.YesNo != nil {
		return []float64{res.YesNo.PYes}
	}
	binary := res.Candidates != nil
	if dist := res.ManyDistribution(); dist != nil {
		lp := make([]float64, len(dist))
		for i, o := range dist {
			lp[i] = math.Log(o.Probability)
		}
		return lp
	}
	switch {
	case res.Debias != nil && binary:
		return res.Debias.Probabilities
	case res.Debias != nil:
		return res.Debias.Scores
	case binary:
		p := make([]float64, len(res.Candidates))
		for i, c := range res.Candidates {
			p[i] = c.PYes
		}
		return p
	}
	return positionLogprobs(res)
}

// scoringOf names a result's scoring (calibrate.ScoringOf; a noul question's is
// calibrate.ScoringNoul).
func scoringOf(res *Result) string {
	if res.YesNo != nil {
		return calibrate.ScoringNoul
	}
	if res.Knockout != nil {
		return calibrate.KnockoutScoring(res.Knockout.Scoring)
	}
	if res.Shortlist != nil {
		return calibrate.ScoringShortlist
	}
	if db := res.Debias; db != nil && db.Reading == ReadBothOrders {
		if db.Method == debias.PriDe {
			return calibrate.ScoringPriDe + "+" + calibrate.ScoringReverse
		}
		return calibrate.ScoringReverse
	}
	method, shifts, sample := debias.None, 0, false
	if res.Debias != nil {
		method, sample = res.Debias.Method, res.Debias.PriorSample
		shifts = 1 + len(res.Debias.Permutations)
	}
	k := len(res.Options) + len(res.Candidates)
	return calibrate.ScoringOf(res.Candidates != nil, method, shifts, k, sample)
}

// finish applies the Decider's calibration profile and abstention threshold to a result (nil
// passes through).
func (d *Decider) finish(res *Result) *Result {
	if res != nil {
		res.ApplyProfile(d.opts.Calibration, d.opts.AbstainBelow)
		res.Uncalibrated = d.markUncalibrated && res.Calibration == nil
	}
	return res
}

// ApplyProfile applies a calibration profile and an abstention threshold to the result in
// place, as a Decider with Options.Calibration and Options.AbstainBelow does: with a profile holding the
// result's scoring, Probability becomes the calibrated probability of the choice and
// Calibration records the map; Abstained is set when Probability (calibrated or not) is below
// abstainBelow (0: never), or when the injection detector flagged the row for abstention
// (Suspect.Abstain, Options.AbstainOnSuspect). A nil profile, or one without the result's scoring (a row with
// fewer options than Permute), leaves the probabilities as they are. Every other field stays.
// batch.ApplyProfile (jev calibrate --apply) calibrates an existing results file with it,
// without decoding.
func (res *Result) ApplyProfile(p *calibrate.Profile, abstainBelow float64) {
	if p != nil && res.Calibration == nil {
		scoring := scoringOf(res)
		if sc, err := p.For(scoring); err == nil {
			res.applyScoring(p, scoring, sc)
		}
	}
	res.Abstained = (abstainBelow > 0 && res.Probability < abstainBelow) || (res.Suspect != nil && res.Suspect.Abstain)
}

// applyScoring calibrates the result by the profile's scoring sc, named scoring, when its maps
// cover the result's option count: Probability becomes the calibrated probability of the
// choice, Calibration records the map.
func (res *Result) applyScoring(p *calibrate.Profile, scoring string, sc *calibrate.Scoring) {
	scores := scoresOf(res)
	if !sc.Fitted.Covers(len(scores)) {
		return
	}
	m, k := sc.Fitted.For(len(scores))
	probs := m.Apply(scores)
	res.Calibration = &Calibration{Scoring: scoring, Method: m.Method, K: k, Params: m, ProfileSHA256: p.SHA256,
		UncalibratedProbability: res.Probability, Probabilities: probs}
	switch {
	case res.YesNo != nil: // probs[0] is P(yes); the answer "true" or "false" stays
		res.Probability = probs[0]
		if res.Chosen == "false" {
			res.Probability = 1 - probs[0]
		}
	default:
		chosen := 0
		for i := range probs {
			if res.idAt(i) == res.Chosen {
				chosen = i
			}
		}
		res.Probability = probs[chosen]
	}
}

// CalibrationScoring names the scoring of the result's scores (Options.Scoring; "noul" for a
// noul answer, "reverse" for a score read in both orders): the profile entry that calibrates
// it, and what jev calibrate fits on its labelled records.
func (res *Result) CalibrationScoring() string { return scoringOf(res) }

// CalibrationScores are the scores a calibration map reads from the result, in row order: the
// debiased log-probabilities under bias control, else the raw ones; a knockout's or shortlist's log
// distribution; binary, p_yes values (a noul answer's one). Batch records of typed rows keep
// them ("scores") so that jev calibrate fits a question's map without decoding again.
func (res *Result) CalibrationScores() []float64 { return slices.Clone(scoresOf(res)) }

// finishAs is finish for the answer to a question whose own calibration (a scoring of
// Options.QuestionCalibration, calibrate.QuestionScoring) is named question ("" for none): that
// map first, else the Decider's profile.
func (d *Decider) finishAs(res *Result, question string) *Result {
	if p := d.opts.QuestionCalibration; res != nil && p != nil && question != "" {
		if sc, ok := p.Scorings[question]; ok {
			res.applyScoring(p, question, sc)
		}
	}
	return d.finish(res)
}

// idAt is the id of option i in row order.
func (res *Result) idAt(i int) string {
	if dist := res.ManyDistribution(); dist != nil {
		return dist[i].ID
	}
	if res.Candidates != nil {
		return res.Candidates[i].ID
	}
	return res.Options[i].ID
}
