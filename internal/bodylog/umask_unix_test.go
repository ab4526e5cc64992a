//go:build unix

package bodylog

import "syscall"

// setUmask sets the process umask and returns the previous one.
func setUmask(m int) int { return syscall.Umask(m) }

// checkModes reports whether file modes are meaningful here.
const checkModes = true
