package main

import "github.com/gojev/gojev/batch"

// loadRunMeta reads a run file for a test; ok is false when there is none or it cannot be
// read (batch.ReadRunFile says which).
func loadRunMeta(path string) (*batch.RunFile, bool) {
	m, err := batch.ReadRunFile(path)
	return m, err == nil
}
