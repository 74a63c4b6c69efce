// Package cache locates gojev's cache folder, which the build scripts, gojev-native, jev and
// the tests share: the native libraries (native/), backend plugins (plugins/), models
// (models/), data sets (data/) and PriDe priors (priors/).
package cache

import (
	"fmt"
	"os"
	"path/filepath"
)

// The models scripts/fetch-model.sh puts under the cache's models/ folder.
const (
	// DefaultModelFile is the default model that `make model` assembles (scripts/models.tsv):
	// Qwen2.5-Coder-1.5B-Instruct Q4_K_M.
	DefaultModelFile = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
	// SmallModelFile is the small test model (`scripts/fetch-model.sh small`):
	// SmolLM2-135M-Instruct Q4_1, fast enough for tests that make thousands of decisions.
	SmallModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf"
)

// Dir is the cache folder, absolute: $GOJEV_CACHE, else ~/.cache/gojev, as the scripts
// (${GOJEV_CACHE:-$HOME/.cache/gojev}) have it.
func Dir() (string, error) {
	d := os.Getenv("GOJEV_CACHE")
	if d == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("no home folder for the default cache ~/.cache/gojev: %w", err)
		}
		d = filepath.Join(home, ".cache", "gojev")
	}
	return filepath.Abs(d)
}

// Model is where the cache keeps a model file (models/file under Dir); it may not be there.
func Model(file string) (string, error) {
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "models", file), nil
}

// Priors is the folder where runs keep the PriDe priors they estimate (debias.Store):
// $GOJEV_PRIORS, else priors/ under Dir.
func Priors() (string, error) {
	if d := os.Getenv("GOJEV_PRIORS"); d != "" {
		return filepath.Abs(d)
	}
	d, err := Dir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "priors"), nil
}
