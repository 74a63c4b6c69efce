package calibrate

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"math"
	"sync"
)

//go:embed shipped/*.json
var shippedFiles embed.FS

var shippedProfiles = sync.OnceValue(func() []*Profile {
	var out []*Profile
	names, _ := fs.Glob(shippedFiles, "shipped/*.json")
	for _, n := range names {
		b, err := shippedFiles.ReadFile(n)
		if err != nil {
			panic(err) // embedded: cannot fail
		}
		p, err := Read(bytes.NewReader(b))
		if err != nil {
			panic(fmt.Sprintf("calibrate: shipped profile %s: %v", n, err)) // TestShippedProfiles reads them all
		}
		out = append(out, p)
	}
	return out
})

// ShippedTemperature is the temperature a shipped profile of the model (by sha256) and prompt
// version holds for a scoring, whatever chat template it was fitted with: its pooled map's, or
// where it calibrates some option counts only (Fitted.Only), the geometric mean of theirs; and
// whether one ships. It is the value jev calibrate shrinks a few rows' temperature toward.
func ShippedTemperature(modelSHA256, promptVersion, scoring string) (float64, bool) {
	if modelSHA256 == "" {
		return 0, false
	}
	for _, p := range shippedProfiles() {
		if p.Model.SHA256 != modelSHA256 || p.PromptVersion != promptVersion {
			continue
		}
		sc, ok := p.Scorings[scoring]
		if !ok || sc.Fitted.Method != Temperature {
			continue
		}
		if !sc.Fitted.Only {
			return sc.Fitted.Pooled.T, sc.Fitted.Pooled.T > 0
		}
		logs, n := 0.0, 0
		for _, m := range sc.Fitted.ByOptions {
			if m.T > 0 {
				logs, n = logs+math.Log(m.T), n+1
			}
		}
		if n > 0 {
			return math.Exp(logs / float64(n)), true
		}
	}
	return 0, false
}

// ShippedProfile returns the calibration profile gojev ships for a model (by file sha256), its
// chat template (sha256 of the template source) and a prompt version; nil when it ships none.
// A shipped profile is fitted on a pool of public labelled tasks and kept only for the option
// counts where it lowered ECE on every task held out of its fitting (Fitted.Only: rows of
// other counts stay uncalibrated); its Note says how it was made, and docs/calibration.md
// has the measurement. The profiles live in calibrate/shipped/.
func ShippedProfile(modelSHA256, templateSHA256, promptVersion string) *Profile {
	for _, p := range shippedProfiles() {
		if p.Model.SHA256 == modelSHA256 && p.ChatTemplateSHA256 == templateSHA256 && p.PromptVersion == promptVersion {
			c := *p
			return &c
		}
	}
	return nil
}
