//go:build unix

package batch

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock (flock(2)) on f, held until f is closed, without
// waiting: a file another process holds gives ErrBusy. Linux's NFS client maps flock to
// POSIX byte-range locks, so the lock also holds across the nodes of a cluster sharing it.
func lockFile(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrBusy
	}
	if unsupported(err) {
		return nil // a file system without locks (Lustre mounted without flock): go on unlocked
	}
	return err
}

// heldByOther reports whether another process holds lockFile's lock on f's file (a jev
// decide still writing it).
func heldByOther(f *os.File) bool {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	if err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return errors.Is(err, syscall.EWOULDBLOCK)
}

func unsupported(err error) bool {
	for _, e := range []syscall.Errno{syscall.ENOTSUP, syscall.EINVAL, syscall.ENOLCK, syscall.ENOSYS} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
