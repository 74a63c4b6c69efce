package atomicfile

import (
	"errors"
	"syscall"
)

// isNotSupported reports a file system that cannot sync a folder (EINVAL, ENOTSUP).
func isNotSupported(err error) bool {
	return errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP)
}
