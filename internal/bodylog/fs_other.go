//go:build !unix

package bodylog

// Without O_NOFOLLOW, symbolic links are refused by the checks of the
// directories that hold the files.
const (
	oNoFollow = 0
	oNonBlock = 0
)
