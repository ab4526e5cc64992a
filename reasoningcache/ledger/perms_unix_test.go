//go:build unix

package ledger

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestFileModesIgnoreUmask(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "a", "b")
	path := filepath.Join(dir, "c.sqlite")
	s := openTest(t, path, Options{})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil) // make sure -wal has content
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-lock"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", filepath.Base(p), st.Mode().Perm())
		}
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("folder mode %v, want 0700", st.Mode().Perm())
	}
	// Loose modes on existing files are tightened at open.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{})
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("reopened: mode %v, want 0600", st.Mode().Perm())
	}
}
