// Package digest hashes files as gojev records them: hex sha256.
package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// File is the hex sha256 of a file's bytes.
func File(path string) (string, error) {
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

// Model is the sha256 of a model file. scripts/fetch-model.sh leaves a stamp
// "<sha256> <size> <mtime_ns>" in <file>.verified after checking a download; while the file's
// size and mtime still match it, the recorded hash is used, else the file is hashed (about a
// second a GB).
func Model(path string) (string, error) {
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
	return File(path)
}
