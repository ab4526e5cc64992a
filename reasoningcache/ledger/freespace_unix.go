//go:build linux || darwin

package ledger

import "golang.org/x/sys/unix"

// freeBytes returns the bytes available to an unprivileged user on the
// file system holding dir.
func freeBytes(dir string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil //nolint:unconvert // field types differ across systems
}
