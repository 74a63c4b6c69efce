package debias

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/gojev/gojev/internal/atomicfile"
)

// Errors of prior files, testable with errors.Is.
var (
	// ErrNoPrior: PriDe has no prior for a row's option count.
	ErrNoPrior = errors.New("debias: no PriDe prior for this option count")
	// ErrPriorMismatch: a prior file was estimated for another model or contract.
	ErrPriorMismatch = errors.New("debias: the prior was estimated for another model or contract")
	// ErrPriorFile: a prior file cannot be read (bad JSON, a bad prior).
	ErrPriorFile = errors.New("debias: bad prior file")
)

// Reference is the paper PriDe follows, recorded in every prior file.
const Reference = "Zheng et al., Large Language Models Are Not Robust Multiple Choice Selectors, ICLR 2024 (PriDe)"

// DefaultSampleFraction and DefaultMinSampleRows size PriDe's estimation sample: 5 % of the
// rows with a given option count (the paper's ratio), at least 10 of them (or all, when fewer).
const (
	DefaultSampleFraction = 0.05
	DefaultMinSampleRows  = 10
)

// ModelID names the model a prior belongs to: its GGUF file name, its general.name and the
// sha256 of the file.
type ModelID struct {
	File   string `json:"file"`
	Name   string `json:"name,omitempty"`
	SHA256 string `json:"sha256"`
}

// LetterPrior is the prior over the letters of rows with len(Prior) options.
type LetterPrior struct {
	Letters    string    `json:"letters"`     // "ABCDEFGH" for 8 options
	Prior      []float64 `json:"prior"`       // one probability per letter, summing to 1
	SampleRows int       `json:"sample_rows"` // rows it was estimated from, each under k cyclic permutations
	// Source names the rows it was estimated from, where they are not the run's own (a
	// shipped prior, Shipped).
	Source string `json:"source,omitempty"`
}

// Prior is PriDe's letter prior for one model and contract, one LetterPrior per option count.
// It is what --prior FILE holds, as JSON; a service estimates it once and reuses it.
type Prior struct {
	Method        Method              `json:"method"` // PriDe
	Reference     string              `json:"reference"`
	PromptVersion string              `json:"prompt_version"`
	Model         ModelID             `json:"model"`
	ByOptions     map[int]LetterPrior `json:"priors"` // key: the option count k
}

// For returns the prior over the letters of a k-option row.
func (p *Prior) For(k int) ([]float64, bool) {
	if p == nil {
		return nil, false
	}
	lp, ok := p.ByOptions[k]
	return lp.Prior, ok
}

// String is the prior for a person, one part per option count in increasing order:
// "8 options (10 rows): A 0.120 B 0.310 …; 16 options (10 rows): …".
func (p *Prior) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(p.ByOptions)) {
		lp := p.ByOptions[k]
		var b strings.Builder
		fmt.Fprintf(&b, "%d options (%d rows):", k, lp.SampleRows)
		for i, v := range lp.Prior {
			fmt.Fprintf(&b, " %c %.3f", Letters(16)[i%16], v)
		}
		parts = append(parts, b.String())
	}
	return strings.Join(parts, "; ")
}

// Check reports ErrPriorMismatch when the prior was estimated for another model file (by
// sha256) or another prompt version.
func (p *Prior) Check(model ModelID, promptVersion string) error {
	if p.PromptVersion != promptVersion {
		return fmt.Errorf("%w: prompt_version %q, this run %q", ErrPriorMismatch, p.PromptVersion, promptVersion)
	}
	if p.Model.SHA256 != "" && model.SHA256 != "" && p.Model.SHA256 != model.SHA256 {
		return fmt.Errorf("%w: model %s (sha256 %.12s…), this run %s (sha256 %.12s…)", ErrPriorMismatch,
			p.Model.File, p.Model.SHA256, model.File, model.SHA256)
	}
	return nil
}

// validate checks every LetterPrior: k letters, probabilities in (0, 1] summing to 1 ± 1e-6.
func (p *Prior) validate() error {
	if p.Method != PriDe {
		return fmt.Errorf("%w: method %q, want %q", ErrPriorFile, p.Method, PriDe)
	}
	if len(p.ByOptions) == 0 {
		return fmt.Errorf("%w: no priors", ErrPriorFile)
	}
	for k, lp := range p.ByOptions {
		if len(lp.Prior) != k || k < 1 {
			return fmt.Errorf("%w: the %d-option prior has %d letters", ErrPriorFile, k, len(lp.Prior))
		}
		total := 0.0
		for _, v := range lp.Prior {
			if !(v > 0 && v <= 1) {
				return fmt.Errorf("%w: the %d-option prior holds %v", ErrPriorFile, k, v)
			}
			total += v
		}
		if math.Abs(total-1) > 1e-6 {
			return fmt.Errorf("%w: the %d-option prior sums to %v", ErrPriorFile, k, total)
		}
	}
	return nil
}

// ReadPrior decodes and validates a prior file. Errors wrap ErrPriorFile.
func ReadPrior(r io.Reader) (*Prior, error) {
	var p Prior
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPriorFile, err)
	}
	if err := p.validate(); err != nil {
		return nil, err
	}
	return &p, nil
}

// LoadPrior reads a prior file from path (ReadPrior); a missing file wraps fs.ErrNotExist.
func LoadPrior(path string) (*Prior, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	p, err := ReadPrior(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Save writes the prior to path as indented JSON, atomically: a crash leaves the old file or
// the new one, never an empty one (a synced temporary file renamed, the folder synced).
func (p *Prior) Save(path string) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteBytes(path, append(b, '\n'))
}

// Letters returns the first k answer letters.
func Letters(k int) string { return "ABCDEFGHIJKLMNOP"[:k] }

// SampleIndices picks PriDe's estimation sample among n rows: max(min, ⌈fraction·n⌉) of them
// (all when n is smaller), evenly spaced over the input (index ⌊(j+½)·n/s⌋ for j < s), so the
// sample is deterministic, needs no seed, and spreads over a file sorted by label. The
// reference code shuffles instead; an even spread keeps a resumed or sharded run's sample the
// same.
func SampleIndices(n int, fraction float64, minRows int) []int {
	if n <= 0 {
		return nil
	}
	s := max(minRows, int(math.Ceil(fraction*float64(n))))
	s = min(max(s, 1), n)
	out := make([]int, s)
	for j := range out {
		out[j] = int((float64(j) + 0.5) * float64(n) / float64(s))
	}
	return slices.Compact(out)
}
