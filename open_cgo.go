//go:build cgo

package gojev

import (
	"context"

	"github.com/gojev/gojev/backend"
	"github.com/gojev/gojev/debias"
)

// Open loads the GGUF model at path into this process (backend.OpenInProcess: the file is
// validated by package gguf before llama.cpp reads it) and returns a Decider that owns it, as
// New does after the start-up checks. Loading takes seconds; ctx is checked before and after.
// Options.Runtime.Plugins are loaded first (llama.LoadBackend). Under PriDe or the default bias
// control without a Prior (nor a calibration profile's), the stored prior for the file is
// used (debias.DefaultStore); under the default bias control without a Calibration, the
// profile gojev ships for the file and its chat template, if any (calibrate.ShippedProfile).
// Either needs the file's sha256: it is read from its .verified stamp, else hashed (about a
// second a GB). Errors wrap ErrOptions,
// backend.ErrOptions, llama.ErrBackendLoad, backend.ErrNoDevice, llama.ErrLoad, backend.ErrNoTemplate,
// render.ErrTemplate, llama.ErrContext, or the contract's start-up errors (see New).
func Open(ctx context.Context, path string, opts Options) (*Decider, error) {
	opts = opts.following(opts.Calibration)
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt, err := backend.OpenInProcess(path, opts.Runtime)
	if err != nil {
		return nil, err
	}
	defaults := opts.Calibration == nil && opts.Debias == debias.Default
	opts = withStored(opts, path, rt)
	d, err := newDecider(ctx, rt, opts) // opts checked above
	if err != nil {
		_ = rt.Close()
		return nil, err
	}
	d.owns = true
	d.markUncalibrated = defaults // the shipped profile covers only its option counts: the rest say so
	return d, nil
}
