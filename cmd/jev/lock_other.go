//go:build !unix

package main

import "os"

// lockFile does nothing where flock(2) does not exist.
func lockFile(*os.File) error { return nil }
