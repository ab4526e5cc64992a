//go:build linux

package smallfs

import (
	"errors"
	"os"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of the given size (e.g. "8m") with mode 0700 on a
// new temporary directory and returns it, unmounted when the test ends.
// It skips the test where a tmpfs cannot be mounted (it needs root or
// CAP_SYS_ADMIN).
func Mount(t testing.TB, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		t.Skipf("cannot mount a %s tmpfs here (%v; needs root or CAP_SYS_ADMIN): skipping this real-filesystem test", size, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			_ = syscall.Unmount(dir, syscall.MNT_DETACH)
		}
	})
	return dir
}

// Fill appends to the file at path until the filesystem is full (a write
// fails with ENOSPC). Any other error fails the test.
func Fill(t testing.TB, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 16<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", path, err)
			}
			return
		}
	}
}
