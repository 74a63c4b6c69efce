// Package atomicfile writes a file so that a crash leaves either the old file or the whole new
// one, never an empty or partial file: the bytes go to a temporary file beside it, which is
// synced, renamed over the target, and the folder synced (so the rename itself is durable).
// Priors, calibration profiles, run files and reports are written through it.
package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// Write writes path atomically with the bytes write produces: a temporary file in path's
// folder (created 0644), fsync, rename over path, fsync of the folder. On an error the
// temporary file is removed and path is left as it was.
func Write(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := write(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	done = true
	return syncDir(dir)
}

// WriteBytes is Write of b.
func WriteBytes(path string, b []byte) error {
	return Write(path, func(w io.Writer) error { _, err := w.Write(b); return err })
}

// syncDir fsyncs a folder, where the platform can (not on Windows, and not where the file
// system refuses: then the rename is as durable as it gets).
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) && !isNotSupported(err) {
		return err
	}
	return nil
}
