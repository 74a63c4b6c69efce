package report

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/gojev/gojev/batch"
	"github.com/gojev/gojev/calibrate"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/digest"
	"github.com/gojev/gojev/systemone"
)

// FitCalibration is jev calibrate without its flags: it fits a profile on the labelled rows of
// the fitting files (calibrate.New, folds-fold cross-validation, limit > 0 keeps each scoring's
// first limit rows) and reports every scoring's cross-validated figures, and with held-out
// files (evalFiles) every map's held-out figures and the SGR thresholds of maxErrors at
// confidence. The profile's Prior and Sources come from the files.
func FitCalibration(files, evalFiles []string, folds, limit int, maxErrors []float64, confidence float64) (*calibrate.Profile, *CalibrationReport, error) {
	fit, err := CollectSamples(files, limit)
	if err != nil {
		return nil, nil, err
	}
	// A scoring of few rows is shrunk toward the temperature gojev ships for the model and
	// scoring, where one ships (calibrate.ShippedTemperature), else toward 1.
	toward := map[string]float64{}
	for name := range fit.Samples {
		base := cmp.Or(fit.Base[name], name) // a question's: its answers' scoring
		if t, ok := calibrate.ShippedTemperature(fit.Model.SHA256, fit.PromptVersion, base); ok {
			toward[name] = t
		}
	}
	prof, err := calibrate.NewWith(fit.Model, fit.PromptVersion, fit.Samples, calibrate.Config{Folds: folds, ShrinkToward: toward, Confidence: confidence})
	if err != nil {
		return nil, nil, err
	}
	prof.Prior, prof.Sources = fit.Prior, fit.Sources
	rep := &CalibrationReport{Model: fit.Model, PromptVersion: fit.PromptVersion, Folds: folds, NoRunFile: fit.NoRunFile}
	var held *SampleSet
	if len(evalFiles) > 0 {
		if held, err = CollectSamples(evalFiles, 0); err != nil {
			return nil, nil, err
		}
		if held.Model.SHA256 != "" && fit.Model.SHA256 != "" && held.Model.SHA256 != fit.Model.SHA256 {
			return nil, nil, fmt.Errorf("the held-out files were decided by model %s, the fitting files by %s", held.Model.File, fit.Model.File)
		}
	}
	for _, name := range prof.Names() {
		sc := prof.Scorings[name]
		sr := ScoringReport{Scoring: name, Rows: len(fit.Samples[name]), Chosen: sc.Method, Reason: sc.Reason,
			Before: sc.Before, CrossValidated: sc.CV, Pooled: sc.Fitted.Pooled, Certified: sc.Certified}
		for _, k := range slices.Sorted(maps.Keys(sc.Fitted.ByOptions)) {
			sr.ByOptions = append(sr.ByOptions, sc.Fitted.ByOptions[k])
		}
		if sr.SmallestBudget, err = calibrate.SmallestBudget(sc.Points, 1-confidence); err != nil {
			return nil, nil, err
		}
		sr.Confidence = confidence
		if held != nil && len(held.Samples[name]) > 0 {
			if sr.Held, err = evalHeld(fit.Samples[name], held.Samples[name], sc, maxErrors, confidence); err != nil {
				return nil, nil, err
			}
		}
		rep.Scorings = append(rep.Scorings, sr)
	}
	return prof, rep, nil
}

// SampleSet is the labelled decisions of some results files, by scoring (jev calibrate's
// fitting and held-out rows), with the model, prompt version, PriDe prior and files they
// came from.
type SampleSet struct {
	Samples       map[string][]calibrate.Sample
	Model         debias.ModelID
	PromptVersion string
	Prior         *debias.Prior
	Sources       []calibrate.Source
	NoRunFile     []string // files read without a run file beside them (no model, no prior)
	// Base is, for a question's scoring (calibrate.QuestionScoring), the scoring its answers'
	// scores belong to ("pride", "reverse", "noul"): a few rows are shrunk toward its shipped
	// temperature.
	Base map[string]string
}

// CollectSamples reads results files into labelled samples by scoring (a --debias file gives
// its debiased scoring and "raw"; a calibrated file its scores before calibration). A row seen
// twice under one scoring (the raw rows of a raw run and of a PriDe run of the same input) is
// kept once. limit > 0 keeps the first limit samples of each scoring. The files must agree on
// the model and the prompt version.
func CollectSamples(files []string, limit int) (*SampleSet, error) {
	set := &SampleSet{Samples: map[string][]calibrate.Sample{}, Base: map[string]string{}}
	seen := map[string]bool{}
	for _, path := range files {
		runs, err := Load(path, "")
		if err != nil {
			return nil, err
		}
		meta, err := batch.RunFileOf(path)
		if err != nil {
			return nil, err
		}
		if meta == nil {
			set.NoRunFile = append(set.NoRunFile, path)
		}
		if meta != nil && meta.Model != nil {
			if set.Model.SHA256 != "" && meta.Model.SHA256 != "" && set.Model.SHA256 != meta.Model.SHA256 {
				return nil, fmt.Errorf("%s was decided by model %s (sha256 %.12s…), an earlier file by %s (sha256 %.12s…): fit one profile per model",
					path, meta.Model.File, meta.Model.SHA256, set.Model.File, set.Model.SHA256)
			}
			set.Model = *meta.Model
		}
		if meta != nil && meta.Prior != nil && set.Prior == nil {
			set.Prior = meta.Prior
		}
		pv := runs[0].PromptVersion
		if set.PromptVersion != "" && pv != "" && pv != set.PromptVersion {
			return nil, fmt.Errorf("%s holds %s decisions, an earlier file %s: fit one profile per contract", path, pv, set.PromptVersion)
		}
		if pv != "" {
			set.PromptVersion = pv
		}
		input := path
		if meta != nil && meta.Input != "" {
			input = meta.Input
		}
		labelled := 0
		for _, run := range runs {
			if run.Variant == "uncalibrated" {
				continue // the same scores as the file's own run
			}
			for _, d := range run.Decisions {
				key := d.Scoring + "\x00" + input + "\x00" + d.Key
				if d.Scoring == "" || d.Sample.Label < 0 || len(d.Sample.Scores) == 0 || seen[key] {
					continue
				}
				seen[key] = true
				if limit > 0 && len(set.Samples[d.Scoring]) >= limit {
					continue
				}
				set.Samples[d.Scoring] = append(set.Samples[d.Scoring], d.Sample)
				labelled++
			}
		}
		for _, rec := range runs[0].Answers {
			for _, a := range rec.Answers {
				smp, ok := answerSample(a.Answer)
				if !ok {
					continue
				}
				if set.PromptVersion == "" {
					// The Decider's contract (a noul's own prompt is noul-v1 under any).
					set.PromptVersion = a.PromptVersion
					if meta != nil && meta.PromptVersion != "" {
						set.PromptVersion = meta.PromptVersion
					} else if a.Type == "noul" {
						set.PromptVersion = contract.PromptVersion
					}
				}
				scoring := calibrate.QuestionScoring(a.QuestionSHA256)
				key := scoring + "\x00" + input + "\x00" + string(rec.ID) + "#" + fmt.Sprint(rec.Line)
				if seen[key] {
					continue
				}
				seen[key] = true
				if limit > 0 && len(set.Samples[scoring]) >= limit {
					continue
				}
				set.Samples[scoring] = append(set.Samples[scoring], smp)
				set.Base[scoring] = a.Scoring
				labelled++
			}
		}
		sum, err := digest.File(path)
		if err != nil {
			return nil, err
		}
		set.Sources = append(set.Sources, calibrate.Source{File: path, SHA256: sum, Rows: labelled})
	}
	if len(set.Samples) == 0 {
		return nil, fmt.Errorf("no labelled decisions in %s: calibration needs rows with a \"label\"", strings.Join(files, ", "))
	}
	return set, nil
}

// answerSample is a labelled typed answer's sample for its question's scoring
// (calibrate.QuestionScoring): its record's calibration input ("scores"), the label's place
// among its criteria or levels (a noul's: 0 for true, 1 for false, a binary sample of p_yes).
// ok is false for an answer without a label, a question key or scores (records written before
// they held them).
func answerSample(a systemone.Answer) (calibrate.Sample, bool) {
	if a.Label == nil || a.QuestionSHA256 == "" || len(a.Scores) == 0 {
		return calibrate.Sample{}, false
	}
	if a.Type == "noul" {
		yes, ok := a.Label.(bool)
		if !ok || len(a.Scores) != 1 {
			return calibrate.Sample{}, false
		}
		s := calibrate.Sample{Scores: a.Scores, Label: 1, Binary: true}
		if yes {
			s.Label = 0
		}
		return s, true
	}
	want := fmt.Sprint(a.Label) // a choice's name, a score's level
	for i, m := range a.Probabilities {
		if m.Key == want && len(a.Scores) == len(a.Probabilities) {
			return calibrate.Sample{Scores: a.Scores, Label: i}, true
		}
	}
	return calibrate.Sample{}, false
}

// CalibrationReport is what jev calibrate prints (and --json writes).
type CalibrationReport struct {
	Profile       string         `json:"profile,omitempty"`
	Model         debias.ModelID `json:"model"`
	PromptVersion string         `json:"prompt_version"`
	// NoRunFile lists the fitting files read without their run file: the profile then records
	// no model and no PriDe prior from them.
	NoRunFile []string        `json:"no_run_file,omitempty"`
	Folds     int             `json:"folds"`
	Scorings  []ScoringReport `json:"scorings"`
}

type ScoringReport struct {
	Scoring        string                                 `json:"scoring"`
	Rows           int                                    `json:"rows"`
	Chosen         calibrate.Method                       `json:"chosen"`
	Reason         string                                 `json:"reason"`
	Before         calibrate.Metrics                      `json:"before"`
	CrossValidated map[calibrate.Method]calibrate.Metrics `json:"cross_validated"`
	Pooled         calibrate.Map                          `json:"pooled"`
	ByOptions      []calibrate.Map                        `json:"by_options,omitempty"`
	// SmallestBudget is the smallest --max-error the fitting rows certify at Confidence
	// (calibrate.SmallestBudget): a smaller budget is refused.
	SmallestBudget float64     `json:"smallest_budget"`
	Confidence     float64     `json:"confidence"`
	Held           *HeldReport `json:"held_out,omitempty"`
	// Certified is the ECE the fitting rows certify (calibrate.Certify).
	Certified *calibrate.Certificate `json:"certified,omitempty"`
}

// HeldReport scores every method, fitted on all the fitting rows, on held-out rows, and the
// SGR thresholds of the chosen map.
type HeldReport struct {
	Rows       int                                    `json:"rows"`
	Before     calibrate.Metrics                      `json:"before"`
	After      map[calibrate.Method]calibrate.Metrics `json:"after"`
	Abstention []HeldAbstention                       `json:"abstention"`
}

type HeldAbstention struct {
	calibrate.Threshold
	Err          string   `json:"error,omitempty"`
	HeldCoverage float64  `json:"held_coverage"`
	HeldDecided  int      `json:"held_decided"`
	HeldError    float64  `json:"held_error"`
	HeldErrorCI  Interval `json:"held_error_ci95"`
}

func evalHeld(fitRows, heldRows []calibrate.Sample, sc *calibrate.Scoring, maxErrors []float64, confidence float64) (*HeldReport, error) {
	h := &HeldReport{Rows: len(heldRows), Before: calibrate.Uncalibrated(heldRows), After: map[calibrate.Method]calibrate.Metrics{}}
	apply := func(f *calibrate.Fitted) [][]float64 {
		probs := make([][]float64, len(heldRows))
		for i, s := range heldRows {
			probs[i] = f.Apply(s.Scores)
		}
		return probs
	}
	for _, m := range calibrate.Methods {
		f, err := calibrate.FitAll(m, fitRows)
		if err != nil {
			return nil, err
		}
		h.After[m] = calibrate.Score(heldRows, apply(f))
	}
	chosen := apply(sc.Fitted)
	for _, e := range maxErrors {
		th, err := calibrate.SGR(sc.Points, e, 1-confidence)
		a := HeldAbstention{Threshold: th}
		if err != nil {
			a.MaxError, a.Confidence = e, confidence
			a.Err = err.Error()
			h.Abstention = append(h.Abstention, a)
			continue
		}
		wrong := 0
		for i, s := range heldRows {
			c := s.Chosen()
			if chosen[i][c] >= th.Probability {
				a.HeldDecided++
				if c != s.Label {
					wrong++
				}
			}
		}
		a.HeldCoverage = float64(a.HeldDecided) / float64(len(heldRows))
		if a.HeldDecided > 0 {
			a.HeldError = float64(wrong) / float64(a.HeldDecided)
		}
		a.HeldErrorCI = Wilson(wrong, a.HeldDecided)
		h.Abstention = append(h.Abstention, a)
	}
	return h, nil
}

// WriteJSON writes the report as indented JSON.
func (rep *CalibrationReport) WriteJSON(w io.Writer) error { return writeJSON(w, rep) }

// WriteText writes the report for a person.
func (rep *CalibrationReport) WriteText(w io.Writer) {
	fmt.Fprintf(w, "model %s (%s), %s; %d-fold cross-validation\n", rep.Model.Name, rep.Model.File, rep.PromptVersion, rep.Folds)
	row := func(name string, m calibrate.Metrics, mark string) {
		fmt.Fprintf(w, "  %-13s %6.3f %7.3f %7.3f %8.3f  %s\n", name, m.ECE, m.NLL, m.Brier, m.MeanConfidence, mark)
	}
	for _, sr := range rep.Scorings {
		fmt.Fprintf(w, "\nscoring %s: %d labelled fitting rows, accuracy %.1f%%\n", sr.Scoring, sr.Rows, 100*sr.Before.Accuracy)
		fmt.Fprintf(w, "  %-13s %6s %7s %7s %8s\n", "cross-valid.", "ECE", "NLL", "Brier", "mean p")
		row("uncalibrated", sr.Before, "")
		for _, m := range calibrate.Methods {
			cv, ok := sr.CrossValidated[m]
			if !ok {
				continue
			}
			mark := ""
			if m == sr.Chosen {
				mark = "← chosen: " + sr.Reason
			}
			row(string(m), cv, mark)
		}
		if c := sr.Certified; c != nil {
			fmt.Fprintf(w, "  certified: ECE ≤ %.3f at confidence %.2g (%d-fold cross-validated ECE %.3f over these %d rows, and its bootstrap spread), for rows drawn like these\n",
				c.Bound, c.Confidence, c.Folds, c.ECE, c.Rows)
			if sr.Rows < calibrate.FewRowsUsable {
				fmt.Fprintf(w, "  note: %d rows; with fewer than %d the pool's tasks of 5-16 options did not all reach ECE ≤ 0.10 held out (docs/calibration.md): label more rows\n", sr.Rows, calibrate.FewRowsUsable)
			}
		}
		maps := []string{"all rows " + sr.Pooled.Describe()}
		for _, m := range sr.ByOptions {
			maps = append(maps, fmt.Sprintf("%d rows of their k: %s", m.Rows, m.Describe()))
		}
		fmt.Fprintf(w, "  fitted: %s\n", strings.Join(maps, "; "))
		if sr.SmallestBudget < 1 {
			fmt.Fprintf(w, "  abstention: these rows certify --max-error %.3f or more at confidence %.2g (SGR); a smaller budget is refused\n", sr.SmallestBudget, sr.Confidence)
		} else {
			fmt.Fprintf(w, "  abstention: these rows certify no error budget at confidence %.2g (SGR): label more rows for --max-error\n", sr.Confidence)
		}
		if cv, ok := sr.CrossValidated[sr.Chosen]; ok && cv.Brier >= sr.Before.Brier {
			fmt.Fprintf(w, "  warning: no map beats the uncalibrated probabilities on these rows (cross-validated Brier %.3f against %.3f): label more rows before trusting this profile\n", cv.Brier, sr.Before.Brier)
		}
		if t := sr.Pooled.T; sr.Pooled.Method == calibrate.Temperature && (t > 99 || t < 0.0101) {
			fmt.Fprintf(w, "  warning: T=%.3g is at the edge of the search range [0.01, 100]: the scores carry almost no information on these rows\n", t)
		}
		if h := sr.Held; h != nil {
			fmt.Fprintf(w, "  %-13s %6s %7s %7s %8s   (fitted on all %d fitting rows, scored on %d held-out rows, accuracy %.1f%%)\n",
				"held-out", "ECE", "NLL", "Brier", "mean p", sr.Rows, h.Rows, 100*h.Before.Accuracy)
			row("uncalibrated", h.Before, "")
			for _, m := range calibrate.Methods {
				mark := ""
				if m == sr.Chosen {
					mark = "← chosen"
				}
				row(string(m), h.After[m], mark)
			}
			for _, a := range h.Abstention {
				if a.Err != "" {
					fmt.Fprintf(w, "  max error %.3g: %s\n", a.MaxError, a.Err)
					continue
				}
				fmt.Fprintf(w, "  max error %.3g (confidence %.2g): abstain below p=%.3f (fitting rows: coverage %.1f%%, error %.3f, bound %.3f); held-out: coverage %.1f%% (%d/%d), error %.3f [%.3f, %.3f]\n",
					a.MaxError, a.Confidence, a.Probability, 100*a.Coverage, a.Risk, a.Bound, 100*a.HeldCoverage, a.HeldDecided, h.Rows, a.HeldError, a.HeldErrorCI.Low, a.HeldErrorCI.High)
			}
		}
	}
}
