//go:build linux

package ledger

import (
	"errors"
	"os"
	"syscall"
)

// allocate gives f n physically allocated bytes: fallocate(2), not a
// sparse file, so that releasing it really frees room. Filesystems
// without fallocate get zeros written.
func allocate(f *os.File, n int64) error {
	err := syscall.Fallocate(int(f.Fd()), 0, 0, n)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return writeZeros(f, n)
	}
	return err
}
