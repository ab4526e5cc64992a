//go:build unix

package ledger

import (
	"os"
	"syscall"
)

// allocated reports whether a file's blocks cover its size (not sparse).
func allocated(st os.FileInfo) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && sys.Blocks*512 >= st.Size()
}
