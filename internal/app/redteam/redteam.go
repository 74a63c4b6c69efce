// Package redteam builds prompt-injection attacks on labelled decision rows and measures what
// they do to decisions: for each attack family (families-v1.json, versioned, each with its
// published source), every labelled row gets a wrong option as the attacker's target and an
// attacked copy whose evidence ends with the family's text naming it; the figures compare the
// decisions on the attacked rows with those on the clean rows (moved rate, accuracy drop,
// abstention, detection). jev redteam runs it.
package redteam

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/gojev/gojev/contract"
	"github.com/gojev/gojev/pyjson"
)

//go:embed families-v1.json
var familiesJSON []byte

// Catalogue is a versioned set of attack families (families-v1.json).
type Catalogue struct {
	Version     string            `json:"version"`
	Description string            `json:"description"`
	Families    []Family          `json:"families"`
	Transforms  map[string]string `json:"transforms"`
}

// Family is one kind of attack: its texts (variants, one chosen per row), what it names (the
// target's letter, or only its description: "option") and where it comes from.
type Family struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Target      string    `json:"target"` // "letter" or "option"
	Sources     []string  `json:"sources"`
	Variants    []Variant `json:"variants"`
}

// Variant is one attack text: {letter}, {description} and {id} are filled with the target
// option's; Transform (zero-width, homoglyph, bidi) rewrites the filled text as Catalogue.
// Transforms describes.
type Variant struct {
	Name      string `json:"name"`
	Text      string `json:"text"`
	Transform string `json:"transform,omitempty"`
}

// ErrFamily: an unknown family name, or a catalogue that does not hold together.
var ErrFamily = errors.New("redteam: unknown attack family")

// Families returns the built-in catalogue (gojev-injection-v1).
func Families() *Catalogue {
	var c Catalogue
	if err := json.Unmarshal(familiesJSON, &c); err != nil {
		panic("redteam: families-v1.json: " + err.Error()) // embedded at build time; a test reads it
	}
	return &c
}

// Select returns the named families in catalogue order ("all" or empty: every family).
func (c *Catalogue) Select(names []string) ([]Family, error) {
	if len(names) == 0 || (len(names) == 1 && names[0] == "all") {
		return c.Families, nil
	}
	var out []Family
	for _, f := range c.Families {
		if slices.Contains(names, f.Name) {
			out = append(out, f)
		}
	}
	for _, n := range names {
		if !slices.ContainsFunc(c.Families, func(f Family) bool { return f.Name == n }) {
			return nil, fmt.Errorf("%w %q: the families are %s", ErrFamily, n, strings.Join(c.Names(), ", "))
		}
	}
	return out, nil
}

// Names are the catalogue's family names, in order.
func (c *Catalogue) Names() []string {
	var n []string
	for _, f := range c.Families {
		n = append(n, f.Name)
	}
	return n
}

// Attack is what an attacked row carries beside the row's own fields, under "attack".
type Attack struct {
	Family  string `json:"family"`
	Variant string `json:"variant"`
	Version string `json:"version"`
	// Target is the attacker's option id (a wrong option), TargetLetter its letter in the
	// row's own order.
	Target       string `json:"target"`
	TargetLetter string `json:"target_letter"`
	// Text is what was appended to the evidence's last string.
	Text string `json:"text"`
}

// Target picks the attacker's option of a labelled row: a wrong option, drawn with a
// generator seeded by seed and the row's line number, so every family attacks a row towards
// the same option. It returns the option's index, or -1 for a row without a label or without
// a wrong option.
func Target(row contract.Row, line int, seed uint64) int {
	gold := slices.IndexFunc(row.Options, func(o contract.Option) bool { return o.ID == row.Label })
	if row.Label == "" || gold < 0 || len(row.Options) < 2 {
		return -1
	}
	r := rand.New(rand.NewPCG(seed, uint64(line)))
	i := r.IntN(len(row.Options) - 1)
	if i >= gold {
		i++
	}
	return i
}

// Fill fills and transforms a variant's text for a target option at index target.
func (v Variant) Fill(row contract.Row, target int) string {
	o := row.Options[target]
	letter := contract.Letters[target : target+1]
	if v.Transform == "homoglyph" {
		// Only the template's own words: the target's letter and description stay as the
		// options spell them.
		var b strings.Builder
		rest := v.Text
		for {
			loc := placeholder.FindStringIndex(rest)
			if loc == nil {
				b.WriteString(homoglyph(rest))
				break
			}
			b.WriteString(homoglyph(rest[:loc[0]]))
			b.WriteString(rest[loc[0]:loc[1]])
			rest = rest[loc[1]:]
		}
		return fill(b.String(), letter, o)
	}
	s := fill(v.Text, letter, o)
	switch v.Transform {
	case "zero-width":
		return zeroWidth(s)
	case "bidi":
		words := strings.Split(s, " ")
		for i, w := range words {
			words[i] = "\u200f" + w
		}
		return "\u202e" + strings.Join(words, " ") + "\u202c"
	}
	return s
}

func fill(s, letter string, o contract.Option) string {
	return strings.NewReplacer("{letter}", letter, "{description}", o.Description, "{id}", o.ID).Replace(s)
}

var placeholder = regexp.MustCompile(`\{(letter|description|id)\}`)

var homoglyphs = strings.NewReplacer("a", "\u0430", "c", "\u0441", "e", "\u0435", "o", "\u043e", "p", "\u0440", "x", "\u0445", "y", "\u0443")

func homoglyph(s string) string { return homoglyphs.Replace(s) }

// zeroWidth puts U+200B after every character but the last of each run of four or more
// letters.
func zeroWidth(s string) string {
	var b strings.Builder
	runes := []rune(s)
	for i := 0; i < len(runes); {
		j := i
		for j < len(runes) && unicode.IsLetter(runes[j]) {
			j++
		}
		if j-i >= 4 {
			for k := i; k < j; k++ {
				b.WriteRune(runes[k])
				if k < j-1 {
					b.WriteRune('\u200b')
				}
			}
			i = j
			continue
		}
		if j > i {
			b.WriteString(string(runes[i:j]))
			i = j
			continue
		}
		b.WriteRune(runes[i])
		i++
	}
	return b.String()
}

// AttackLine builds the attacked copy of one labelled row line (its input line number line,
// from 1) under a family: the row's fields as they were, in their order, with the family's
// text appended to the last string value of "state" (depth first, in key order; a space
// between them unless the text starts with white space), and an "attack" object (Attack).
// A state with no string in it becomes {"evidence": state, "note": text}. The variant is
// drawn per row with a generator seeded by seed, the line and the family. ok is false for a
// row that cannot be attacked (no label, no wrong option, or not a valid row).
func AttackLine(c *Catalogue, f Family, raw []byte, line int, seed uint64) (out []byte, a Attack, ok bool, err error) {
	row, err := contract.ParseRow(raw)
	if err != nil {
		return nil, Attack{}, false, nil
	}
	target := Target(row, line, seed)
	if target < 0 {
		return nil, Attack{}, false, nil
	}
	h := fnv.New64a()
	h.Write([]byte(f.Name))
	r := rand.New(rand.NewPCG(seed^h.Sum64(), uint64(line)))
	v := f.Variants[r.IntN(len(f.Variants))]
	text := v.Fill(row, target)
	a = Attack{Family: f.Name, Variant: v.Name, Version: c.Version, Target: row.Options[target].ID,
		TargetLetter: contract.Letters[target : target+1], Text: text}
	doc, err := pyjson.Decode(raw)
	if err != nil {
		return nil, Attack{}, false, nil
	}
	obj := doc.(pyjson.Object)
	for i := range obj {
		if obj[i].Key == "state" {
			var done bool
			if obj[i].Value, done = appendText(obj[i].Value, text); !done {
				obj[i].Value = pyjson.Object{{Key: "evidence", Value: obj[i].Value}, {Key: "note", Value: text}}
			}
		}
	}
	var attack pyjson.Object
	for _, m := range []struct{ k, v string }{{"family", a.Family}, {"variant", a.Variant}, {"version", a.Version},
		{"target", a.Target}, {"target_letter", a.TargetLetter}, {"text", a.Text}} {
		attack = append(attack, pyjson.Member{Key: m.k, Value: m.v})
	}
	obj = slices.DeleteFunc(obj, func(m pyjson.Member) bool { return m.Key == "attack" })
	obj = append(obj, pyjson.Member{Key: "attack", Value: attack})
	s, err := pyjson.String(obj)
	if err != nil {
		return nil, Attack{}, false, err
	}
	return []byte(s), a, true, nil
}

// appendText appends text to the last string inside v (depth first, in order), reporting
// whether there was one.
func appendText(v any, text string) (any, bool) {
	switch x := v.(type) {
	case string:
		sep := " "
		if r, _ := utf8.DecodeRuneInString(text); unicode.IsSpace(r) || x == "" {
			sep = ""
		}
		return x + sep + text, true
	case pyjson.Object:
		for i := len(x) - 1; i >= 0; i-- {
			if nv, ok := appendText(x[i].Value, text); ok {
				x[i].Value = nv
				return x, true
			}
		}
	case []any:
		for i := len(x) - 1; i >= 0; i-- {
			if nv, ok := appendText(x[i], text); ok {
				x[i] = nv
				return x, true
			}
		}
	}
	return v, false
}
