//go:build unix

package store

import (
	"errors"
	"syscall"
)

// writeDenied says why this process may not write path, or "" when it
// may. It asks the kernel (access(2)) rather than reading mode bits, so
// that it answers as a write would: root may write a 0444 file, nobody may
// write on a read-only file system.
func writeDenied(path string) string {
	const wOK = 0x2
	err := syscall.Access(path, wOK)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.EROFS):
		return "read-only file system"
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return "permission denied"
	}
	return "" // a missing path, say: the write itself will tell
}
