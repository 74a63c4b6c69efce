package calibrate

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Calibration per question: a System One user asks the same questions again and again (the
// same instructions and criteria about each new state), so a handful of labelled answers to
// one question can calibrate every later answer to it. Such a scoring is named by the
// question's key (gojev.QuestionSHA256): QuestionScoring. jev calibrate fits one from the
// typed rows' records (their "question_sha256" and "scores"), and a Decider with
// Options.QuestionCalibration applies it to the answers of that question, before any other
// profile.

// questionPrefix begins the name of a scoring fitted on one question's answers.
const questionPrefix = "question:"

// QuestionScoring names the scoring of the answers to one question, by the question's key (the
// 64 hex digits of gojev.QuestionSHA256): "question:<key>".
func QuestionScoring(key string) string { return questionPrefix + key }

// IsQuestionScoring reports whether a scoring was fitted on one question's answers
// (QuestionScoring), and returns the question's key.
func IsQuestionScoring(scoring string) (string, bool) {
	return strings.CutPrefix(scoring, questionPrefix)
}

// Questions reports whether every scoring of the profile is a question's (QuestionScoring).
func (p *Profile) Questions() bool {
	for name := range p.Scorings {
		if _, ok := IsQuestionScoring(name); !ok {
			return false
		}
	}
	return len(p.Scorings) > 0
}

// LoadQuestions reads the per-question profiles at path, a profile file or a folder of them
// (its *.json files, not its subfolders), into one profile holding every question's scoring
// (jev serve --calibration). Errors: Load's; ErrProfile for a file holding another scoring
// than a question's, for two files holding the same question, and for files of different
// models or prompt versions; fs.ErrNotExist for a folder without a profile.
func LoadQuestions(path string) (*Profile, error) {
	files := []string{path}
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.json")); err != nil {
			return nil, err
		}
		slices.Sort(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%s: no *.json profile in the folder: %w", path, fs.ErrNotExist)
		}
	}
	var out *Profile
	from := map[string]string{}
	for _, f := range files {
		p, err := Load(f)
		if err != nil {
			return nil, err
		}
		if !p.Questions() {
			return nil, fmt.Errorf("%w: %s holds scorings %s: a profile of questions holds only question:<sha256> scorings (jev calibrate on typed rows)",
				ErrProfile, f, strings.Join(p.Names(), ", "))
		}
		if out == nil {
			out = &Profile{Format: p.Format, PromptVersion: p.PromptVersion, Model: p.Model, Scorings: map[string]*Scoring{}, References: p.References}
		}
		if err := out.Check(p.Model, p.PromptVersion); err != nil {
			return nil, fmt.Errorf("%s and %s: %w", files[0], f, err)
		}
		if out.Model.SHA256 == "" {
			out.Model = p.Model
		}
		for name, sc := range p.Scorings {
			if prev, ok := from[name]; ok {
				return nil, fmt.Errorf("%w: %s and %s both calibrate %s", ErrProfile, prev, f, name)
			}
			from[name] = f
			out.Scorings[name] = sc
		}
		out.Sources = append(out.Sources, Source{File: f, SHA256: p.SHA256})
	}
	if len(files) == 1 {
		out.SHA256 = out.Sources[0].SHA256
	} else {
		out.SHA256 = combinedSHA256(out.Sources)
	}
	return out, nil
}

// combinedSHA256 names a profile merged from several files: the sha256 of their sha256s, in
// file order.
func combinedSHA256(sources []Source) string {
	h := sha256.New()
	for _, s := range sources {
		h.Write([]byte(s.SHA256))
	}
	return hex.EncodeToString(h.Sum(nil))
}
