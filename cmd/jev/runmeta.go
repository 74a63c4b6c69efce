package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gojev/gojev"
	"github.com/gojev/gojev/debias"
)

// runMeta is what jev decide records about a run beside its -o file, in <out>.run.json: the
// model, contract and flags a report names, the PriDe prior a resumed run reuses, and the
// run's wall time (decisions/s). It is written when the run starts and again when it ends.
type runMeta struct {
	Jev      string   `json:"jev"`
	LlamaCpp string   `json:"llama_cpp"`
	Args     []string `json:"args"`
	Input    string   `json:"input"`
	// InputSHA256 is the input file's sha256, where the run recorded it (jev redteam).
	InputSHA256 string `json:"input_sha256,omitempty"`
	// Shard is "I/N" for a run of jev decide --shard (shard I of N).
	Shard string `json:"shard,omitempty"`
	// Parts are the results files jev merge joined into this one.
	Parts   []string        `json:"parts,omitempty"`
	Model   *debias.ModelID `json:"model,omitempty"`
	Backend string          `json:"backend"`
	// Decode is the in-process decode mode (one-sequence, packed); Devices the devices that
	// decided (the GPU names, or CPU) and Plugins the backend plugins loaded.
	Decode        string        `json:"decode,omitempty"`
	Devices       []string      `json:"devices,omitempty"`
	Plugins       []string      `json:"plugins,omitempty"`
	PromptVersion string        `json:"prompt_version"`
	Debias        debias.Method `json:"debias,omitempty"`
	// Permute is --permute N (0: none, or cyclic over all k).
	Permute int           `json:"permute,omitempty"`
	Prior   *debias.Prior `json:"prior,omitempty"`
	// Calibration names the --calibration profile; AbstainBelow is the threshold in force.
	Calibration  *runCalibration `json:"calibration,omitempty"`
	AbstainBelow float64         `json:"abstain_below,omitempty"`
	// Knockout is how rows of more than 16 options were grouped (--knockout-grouping,
	// --knockout-seed), nil when left at the default.
	Knockout *gojev.KnockoutOptions `json:"knockout,omitempty"`
	// Detect is the injection detector's setting (--detect), nil without it.
	Detect   *runDetect `json:"detect,omitempty"`
	NThreads int        `json:"n_threads"`
	Started  time.Time  `json:"started"`
	Finished bool       `json:"finished"`
	ElapsedS float64    `json:"elapsed_s"`
	Rows     int        `json:"rows"`
	Decided  int        `json:"decided"`
	Errors   int        `json:"errors"`
	Skipped  int        `json:"skipped,omitempty"`
	// DecisionsPerS is Decided / ElapsedS of this invocation (a resumed run counts only
	// what it decided itself).
	DecisionsPerS float64 `json:"decisions_per_s"`
}

// runCalibration is the calibration profile a run used.
type runCalibration struct {
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
}

// runMetaPath is the run file beside a results file.
func runMetaPath(out string) string { return out + ".run.json" }

// save writes m to path atomically.
func (m *runMeta) save(path string) error {
	return writeFile(path, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
	})
}

// loadRunMeta reads a run file; ok is false when there is none or it cannot be read.
func loadRunMeta(path string) (*runMeta, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var m runMeta
	if json.Unmarshal(b, &m) != nil {
		return nil, false
	}
	return &m, true
}

// modelSHA256 returns the sha256 of a model file. scripts/fetch-model.sh leaves a stamp
// "<sha256> <size> <mtime_ns>" in <file>.verified after checking a download; when the file's
// size and mtime still match it, the recorded hash is used, else the file is hashed (about a
// second a GB).
func modelSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if b, err := os.ReadFile(path + ".verified"); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 3 && f[1] == strconv.FormatInt(st.Size(), 10) && f[2] == strconv.FormatInt(st.ModTime().UnixNano(), 10) {
			return f[0], nil
		}
	}
	return fileSHA256(path)
}

// fileSHA256 is the hex sha256 of a file's bytes.
func fileSHA256(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// modelIdentity names a model file: its base name, general.name and sha256.
func modelIdentity(path, name string) (debias.ModelID, error) {
	sum, err := modelSHA256(path)
	if err != nil {
		return debias.ModelID{}, err
	}
	return debias.ModelID{File: filepath.Base(path), Name: name, SHA256: sum}, nil
}
