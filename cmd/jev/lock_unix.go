//go:build unix

package main

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock(2)) on f, held until f is closed, without
// waiting: a file another process holds gives errOutputBusy. Linux's NFS client maps flock to
// POSIX byte-range locks, so the lock also holds across the nodes of a cluster sharing it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errOutputBusy
	}
	if errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOLCK) {
		return nil // a file system without locks: go on unlocked
	}
	return err
}
