package calibrate_test

import (
	"bytes"
	"errors"
	"math"
	"os"
	"testing"

	"github.com/gojev/gojev/calibrate"
)

// FuzzReadProfile: any bytes as a calibration profile read as a valid profile, whose every map
// turns scores into a distribution, or give an error wrapping ErrProfile; never a panic. Seeded
// with the profile jev calibrate fitted on the Banking77 sample with the default model.
func FuzzReadProfile(f *testing.F) {
	real, err := os.ReadFile("testdata/profile.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(real)
	f.Add(bytes.Replace(real, []byte(`"temperature"`), []byte(`"isotonic"`), 2))
	f.Add([]byte(`{"format": "gojev-calibration-v1", "scorings": {"raw": {"method": "temperature", "fitted": {"method": "temperature", "pooled": {"method": "temperature", "t": 0}}}}}`))
	f.Add([]byte(`{"format": "gojev-calibration-v1", "scorings": {"raw": null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := calibrate.Read(bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, calibrate.ErrProfile) {
				t.Fatalf("a rejection must wrap ErrProfile: %v", err)
			}
			return
		}
		for name, sc := range p.Scorings {
			for _, k := range []int{2, 8, 16} {
				scores := make([]float64, k)
				for i := range scores {
					scores[i] = -float64(i) / 2
				}
				probs := sc.Fitted.Apply(scores)
				sum := 0.0
				for _, v := range probs {
					if math.IsNaN(v) || v < 0 {
						t.Fatalf("%s: probability %v", name, v)
					}
					sum += v
				}
				if math.Abs(sum-1) > 1e-6 {
					t.Fatalf("%s, k=%d: probabilities sum to %v", name, k, sum)
				}
			}
		}
	})
}
