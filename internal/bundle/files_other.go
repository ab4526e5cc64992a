//go:build !unix

package bundle

// Without O_NOFOLLOW, symbolic links are refused by Lstat checks alone.
const (
	oNoFollow = 0
	oNonBlock = 0
)
