//go:build !unix

package bodylog

// setUmask does nothing where there is no umask.
func setUmask(m int) int { return 0 }

// checkModes reports whether file modes are meaningful here.
const checkModes = false
