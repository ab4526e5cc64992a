//go:build !unix

package replay

// Without O_NOFOLLOW, symbolic links are refused by Lstat checks alone.
const (
	oNoFollow = 0
	oNonBlock = 0
)
