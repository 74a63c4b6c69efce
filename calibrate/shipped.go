package calibrate

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
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
