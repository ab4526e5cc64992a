//go:build unix

package bundle

import "syscall"

// Opening never follows a symbolic link at the last component, and a FIFO
// planted where a file is expected does not block.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
