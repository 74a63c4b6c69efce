package gojev

import (
	"path/filepath"

	"github.com/gojev/gojev/debias"
	"github.com/gojev/gojev/internal/digest"
)

// ModelIdentity names a model file as run files, PriDe priors and calibration profiles record
// it, and as they are checked against (debias.Prior.Check, calibrate.Profile.Check): its base
// name, its general.name (name; Decider.Check().Model.Name) and its sha256, from the .verified
// stamp scripts/fetch-model.sh leaves beside a checked download while the file's size and
// mtime match it, else hashed (about a second a GB). Errors are the file's (fs.ErrNotExist).
func ModelIdentity(path, name string) (debias.ModelID, error) {
	sum, err := digest.Model(path)
	if err != nil {
		return debias.ModelID{}, err
	}
	return debias.ModelID{File: filepath.Base(path), Name: name, SHA256: sum}, nil
}
