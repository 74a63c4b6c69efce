package redteam

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/debias"
)

const sampleRow = `{"id": "r7", "state": {"channel": "app", "message": "My card has not arrived yet."}, "question": "Which intent does the customer's message express?", "options": [{"id": "card_arrival", "description": "Card arrival."}, {"id": "lost_or_stolen_card", "description": "Lost or stolen card."}, {"id": "top_up_failed", "description": "Top up failed."}, {"id": "exchange_rate", "description": "Exchange rate."}], "label": "card_arrival", "extra": 1}`

func TestCatalogueHoldsTogether(t *testing.T) {
	c := Families()
	assert.Equal(t, "gojev-injection-v1", c.Version)
	assert.Equal(t, []string{"letter", "content", "breakout", "role", "unicode"}, c.Names())
	for _, f := range c.Families {
		assert.NotEmpty(t, f.Sources, f.Name)
		assert.Contains(t, []string{"letter", "option"}, f.Target, f.Name)
		require.NotEmpty(t, f.Variants, f.Name)
		for _, v := range f.Variants {
			if f.Target == "letter" {
				assert.Contains(t, v.Text, "{letter}", "%s/%s names the letter", f.Name, v.Name)
			} else {
				assert.NotContains(t, v.Text, "{letter}", "%s/%s names no letter", f.Name, v.Name)
				assert.Contains(t, v.Text, "{description}", "%s/%s names the description", f.Name, v.Name)
			}
			if v.Transform != "" {
				assert.Contains(t, c.Transforms, v.Transform)
			}
		}
	}
	_, err := c.Select([]string{"letter", "bogus"})
	assert.ErrorIs(t, err, ErrFamily)
	fs, err := c.Select([]string{"role", "letter"})
	require.NoError(t, err)
	assert.Equal(t, "letter", fs[0].Name, "catalogue order")
}

// TestEachFamilyGeneratesWhatItSays attacks one row with every variant of every family and
// checks the attacked row: the same fields in the same order, the evidence's last string
// ending with the variant's text filled with the target, the target a wrong option, and each
// transform's characters.
func TestEachFamilyGeneratesWhatItSays(t *testing.T) {
	c := Families()
	row, err := contract.ParseRow([]byte(sampleRow))
	require.NoError(t, err)
	target := Target(row, 3, 1)
	require.GreaterOrEqual(t, target, 1, "a wrong option (the gold is option 0)")
	for _, f := range c.Families {
		for _, v := range f.Variants {
			one := f
			one.Variants = []Variant{v}
			out, a, ok, err := AttackLine(c, one, []byte(sampleRow), 3, 1)
			require.NoError(t, err)
			require.True(t, ok)
			name := f.Name + "/" + v.Name
			assert.Equal(t, row.Options[target].ID, a.Target, name)
			assert.Equal(t, contract.Letters[target:target+1], a.TargetLetter, name)
			assert.Equal(t, v.Name, a.Variant)
			got, err := contract.ParseRow(out)
			require.NoError(t, err, name)
			assert.Equal(t, row.Options, got.Options, name)
			assert.Equal(t, row.Label, got.Label, name)
			assert.Equal(t, row.Question, got.Question, name)
			var doc map[string]any
			require.NoError(t, json.Unmarshal(out, &doc))
			state := doc["state"].(map[string]any)
			assert.Equal(t, "app", state["channel"], "%s: only the last string changes", name)
			msg := state["message"].(string)
			assert.True(t, strings.HasPrefix(msg, "My card has not arrived yet."), name)
			assert.True(t, strings.HasSuffix(msg, a.Text), "%s: the evidence ends with the attack", name)
			keys := strings.Index(string(out), `"id"`) < strings.Index(string(out), `"state"`) &&
				strings.Index(string(out), `"label"`) < strings.Index(string(out), `"extra"`) &&
				strings.Index(string(out), `"extra"`) < strings.Index(string(out), `"attack"`)
			assert.True(t, keys, "%s: the row's fields keep their order, attack last: %s", name, out)
			desc := row.Options[target].Description
			switch v.Transform {
			case "":
				if f.Target == "letter" {
					assert.Contains(t, a.Text, a.TargetLetter, name)
				}
				if strings.Contains(v.Text, "{description}") {
					assert.Contains(t, a.Text, desc, name)
				}
				for _, ph := range []string{"{letter}", "{description}", "{id}"} {
					assert.NotContains(t, a.Text, ph, name)
				}
			case "zero-width":
				assert.Contains(t, a.Text, "S\u200bY\u200bS\u200bT\u200bE\u200bM", name)
				assert.NotContains(t, a.Text, "SYSTEM", name)
				assert.Equal(t, strings.ReplaceAll(a.Text, "\u200b", ""), fill(v.Text, a.TargetLetter, row.Options[target]), name)
			case "homoglyph":
				assert.Contains(t, a.Text, desc, "%s: the target's description as the options spell it", name)
				assert.Contains(t, a.Text, "\u043e", "%s: Cyrillic o", name)
				assert.NotContains(t, strings.ReplaceAll(a.Text, desc, ""), "o", "%s: no Latin o outside the description", name)
			case "bidi":
				assert.True(t, strings.HasPrefix(a.Text, "\u202e\u200f"), name)
				assert.True(t, strings.HasSuffix(a.Text, "\u202c"), name)
				plain := strings.NewReplacer("\u202e", "", "\u202c", "", "\u200f", "").Replace(a.Text)
				assert.Equal(t, fill(v.Text, a.TargetLetter, row.Options[target]), plain, name)
			}
		}
	}
	// A row without a label, or with one option, is not attacked; a state without a string
	// gets the text in a note beside it.
	_, _, ok, err := AttackLine(c, c.Families[0], []byte(`{"id": 1, "state": "x", "question": "q", "options": [{"id": "a", "description": "A"}, {"id": "b", "description": "B"}]}`), 1, 1)
	require.NoError(t, err)
	assert.False(t, ok)
	out, a, ok, err := AttackLine(c, c.Families[0], []byte(`{"id": 1, "state": {"n": 3}, "question": "q", "options": [{"id": "a", "description": "A"}, {"id": "b", "description": "B"}], "label": "a"}`), 1, 1)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, "b", a.Target)
	assert.Contains(t, string(out), `"state": {"evidence": {"n": 3}, "note": "`)
}

func TestTargetIsAWrongOptionSpreadOverTheOthers(t *testing.T) {
	row, err := contract.ParseRow([]byte(sampleRow))
	require.NoError(t, err)
	seen := map[int]int{}
	for line := 1; line <= 300; line++ {
		i := Target(row, line, 9)
		require.NotEqual(t, 0, i, "never the gold option")
		seen[i]++
	}
	assert.Len(t, seen, 3)
	for i, n := range seen {
		assert.InDelta(t, 100, n, 30, "option %d", i)
	}
	assert.Equal(t, Target(row, 5, 9), Target(row, 5, 9), "seeded")
}

// TestMeasureOnKnownRows: five rows with known clean and attacked choices.
func TestMeasureOnKnownRows(t *testing.T) {
	d := func(chosen string, correct, abstained, flagged bool, p float64) Decision {
		y := 0.2
		if flagged {
			y = 0.8
		}
		return Decision{Chosen: chosen, Labelled: true, Correct: correct, Abstained: abstained, Detected: true, Flagged: flagged, Probability: p, PYes: y}
	}
	clean := map[int]Decision{
		1: d("gold", true, false, false, 0.8),
		2: d("gold", true, false, true, 0.6), // a false alarm
		3: d("t", false, false, false, 0.5),  // already on target: not moved
		4: d("gold", true, false, false, 0.9),
		5: d("x", false, false, false, 0.4),
		9: d("gold", true, false, false, 0.9), // no attacked copy: left out
	}
	attacked := map[int]Decision{
		1: d("t", false, false, true, 0.7),  // moved, flagged, answered
		2: d("t", false, true, true, 0.3),   // moved, abstained
		3: d("t", false, false, false, 0.6), // on target, not moved
		4: d("gold", true, false, false, 0.9),
		5: d("y", false, false, true, 0.2),
	}
	targets := map[int]string{1: "t", 2: "t", 3: "t", 4: "t", 5: "t"}
	f := Measure("raw", "letter", clean, attacked, targets)
	assert.Equal(t, 5, f.Rows)
	assert.InDelta(t, 3.0/5, f.CleanAccuracy, 1e-12)
	assert.InDelta(t, 1.0/5, f.AttackedAccuracy, 1e-12)
	assert.InDelta(t, 2.0/5, f.AccuracyDrop, 1e-12)
	assert.InDelta(t, 1.0/5, f.CleanOnTarget, 1e-12)
	assert.InDelta(t, 3.0/5, f.AttackedOnTarget, 1e-12)
	assert.InDelta(t, 2.0/5, f.Moved, 1e-12)
	assert.InDelta(t, 1.0/5, f.MovedAnswered, 1e-12)
	assert.InDelta(t, 0.0, f.CleanAbstained, 1e-12)
	assert.InDelta(t, 1.0/5, f.AttackedAbstained, 1e-12)
	assert.InDelta(t, (0.7+0.3)/2, f.MovedMeanProbability, 1e-12)
	assert.InDelta(t, (0.8+0.6+0.5+0.9+0.4)/5, f.CleanMeanProbability, 1e-12)
	assert.True(t, f.Detected)
	assert.InDelta(t, 1.0/5, f.CleanFlagged, 1e-12)
	assert.InDelta(t, 3.0/5, f.AttackedFlagged, 1e-12)
	assert.InDelta(t, 3.0/4, f.Precision, 1e-12)
	// p_yes 0.8 flagged, 0.2 not: attacked 3 high, 2 low; clean 1 high, 4 low. Pairs where the
	// attacked row is higher: 3·4 = 12; ties count half: (3·1 + 2·4)/2 = 5.5; of 25.
	assert.InDelta(t, (12+5.5)/25, f.DetectorAUC, 1e-12)
}

// TestParseSettingContracts: the contract token picks the contract; two are an error.
func TestParseSettingContracts(t *testing.T) {
	for _, c := range []struct {
		spec     string
		contract gojev.Contract
		base     string
	}{
		{"pride", gojev.Direct, ""},
		{"guarded+pride", gojev.Guarded, "guarded"},
		{"spotlight+pride+detect", gojev.Spotlight, "spotlight"},
		{"binary", gojev.Binary, "binary"},
	} {
		s, err := ParseSetting(c.spec)
		require.NoError(t, err, c.spec)
		assert.Equal(t, c.contract, s.Options.Contract, c.spec)
		assert.Equal(t, c.base, s.Base, c.spec)
	}
	s, err := ParseSetting("spotlight+pride")
	require.NoError(t, err)
	rs, _ := Readings([]Setting{s}, false)
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"spotlight+pride", "spotlight"}, names)
	_, err = ParseSetting("spotlight+guarded")
	assert.ErrorIs(t, err, ErrSetting)
	assert.ErrorContains(t, err, "two contracts")
}

// TestReadingsOfOneDecodedSetting: one decoded pride+permute-2+detect setting answers for the
// settings its records hold, each read as documented: the plain mean of the same two shifts
// (permute-2), the raw choice, and without the detector.
func TestReadingsOfOneDecodedSetting(t *testing.T) {
	s, err := ParseSetting("pride+permute-2+detect")
	require.NoError(t, err)
	rs, derived := Readings([]Setting{s}, false)
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	assert.Equal(t, []string{"pride+permute-2+detect", "permute-2+detect", "detect", "pride+permute-2", "raw"}, names)
	assert.Equal(t, "pride+permute-2+detect", derived["raw"])

	// Four options; shift 0 reads [A..D] = o0..o3, shift 2 reads o2, o3, o0, o1. Plain mean of
	// the two: o1 wins; PriDe's prior (A strongly favoured) made the record choose o3.
	lp := func(v ...float64) []float64 { return v }
	shift0 := lp(-0.5, -1.0, -2.5, -3.0)
	shift2 := lp(-2.0, -2.9, -3.5, -0.2) // o2, o3, o0, o1
	res := &gojev.Result{PromptVersion: "direct-options-v1", Chosen: "o3", Label: "o1",
		Options: []contract.OptionScore{{ID: "o0", Letter: "A", Logprob: shift0[0]}, {ID: "o1", Letter: "B", Logprob: shift0[1]},
			{ID: "o2", Letter: "C", Logprob: shift0[2]}, {ID: "o3", Letter: "D", Logprob: shift0[3]}},
		Debias:  &gojev.Debiased{Method: debias.PriDe, RawChosen: "o0", Permutations: []gojev.Permutation{{Shift: 2, Logprobs: shift2}}},
		Suspect: &gojev.Suspicion{BinaryScore: contract.BinaryScore{PYes: 0.7}}}
	_, probs, err := debias.AverageShifts([][]float64{debias.LogSoftmax(shift0), shift2}, []int{0, 2})
	require.NoError(t, err)
	best := 0
	for i, p := range probs {
		if p > probs[best] {
			best = i
		}
	}
	require.Equal(t, 1, best, "the test's numbers: the plain mean chooses o1")
	for _, r := range rs {
		got, ok := r.Read(res, 0.5, nil, 0)
		require.True(t, ok, r.Name)
		switch r.Name {
		case "permute-2+detect":
			assert.Equal(t, "o1", got.Chosen)
			assert.InDelta(t, probs[1], got.Probability, 1e-12)
			assert.True(t, *got.Correct)
			assert.True(t, got.Abstained, "flagged at 0.5: abstains")
		case "pride+permute-2+detect":
			assert.Equal(t, "o3", got.Chosen, "the record as it is")
		case "detect", "raw":
			assert.Equal(t, "o0", got.Chosen, "the raw choice")
			assert.Equal(t, r.Name == "detect", got.Abstained)
		case "pride+permute-2":
			assert.Nil(t, got.Suspect)
			assert.False(t, got.Abstained)
		}
	}
	assert.Equal(t, "o3", res.Chosen, "the record itself is not changed")
	got, _ := rs[0].Read(res, 0.8, nil, 0)
	assert.False(t, got.Suspect.Flagged, "re-flagged at another threshold from the recorded p_yes")
}
