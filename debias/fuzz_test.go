package debias_test

import (
	"bytes"
	"errors"
	"os"
	"testing"

	"github.com/gojev/gojev/debias"
)

// FuzzReadPrior: any bytes as a prior file read as a valid prior (every option count's letters
// a distribution) or give an error wrapping ErrPriorFile; never a panic. Seeded with a prior the
// default model estimated on the Banking77 sample.
func FuzzReadPrior(f *testing.F) {
	real, err := os.ReadFile("testdata/prior.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(bytes.Replace(real, []byte(`"8"`), []byte(`"3"`), 1))
	f.Add([]byte(`{"method": "pride", "priors": {"2": {"letters": "AB", "prior": [0.5, 0.5]}}}`))
	f.Add([]byte(`{"priors": {"-1": {"prior": []}}}`))
	f.Add([]byte(`{"priors": {"2": {"prior": [NaN, 1]}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := debias.ReadPrior(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, debias.ErrPriorFile) {
				t.Fatalf("a rejection must wrap ErrPriorFile: %v", err)
			}
			return
		}
		for k, lp := range p.ByOptions {
			if len(lp.Prior) != k {
				t.Fatalf("prior for %d options has %d letters", k, len(lp.Prior))
			}
			sum := 0.0
			for _, v := range lp.Prior {
				if !(v > 0 && v <= 1) {
					t.Fatalf("prior value %v", v)
				}
				sum += v
			}
			if sum < 1-1e-6 || sum > 1+1e-6 {
				t.Fatalf("prior for %d options sums to %v", k, sum)
			}
			if _, ok := p.For(k); !ok {
				t.Fatal("For misses a count the file holds")
			}
		}
	})
}
