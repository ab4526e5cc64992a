//go:build unix

package bodylog

import "syscall"

// oNoFollow makes opening a symbolic link fail; oNonBlock keeps a FIFO
// planted in the capture directory from blocking the writer.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
