//go:build !unix

package batch

import "os"

// lockFile does nothing where flock(2) does not exist.
func lockFile(*os.File) error { return nil }

// heldByOther reports false where flock(2) does not exist.
func heldByOther(*os.File) bool { return false }
