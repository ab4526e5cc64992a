//go:build !linux

package ledger

import "os"

// allocate gives f n bytes by writing zeros (no portable fallocate).
func allocate(f *os.File, n int64) error { return writeZeros(f, n) }
