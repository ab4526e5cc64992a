package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

const (
	dirMode  fs.FileMode = 0o700
	fileMode fs.FileMode = 0o600
)

// ensureDir creates the database's folder owner-only, whatever the umask.
// An existing folder is tightened only if it was created by us just now:
// an operator's existing folder (for example /var/lib/caddy) keeps its mode.
func ensureDir(dir string) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("stat %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return chmod(dir, dirMode)
}

// tightenFiles makes the database, its -wal, -shm and -lock files 0600,
// whatever the umask and whatever they were. It works by path and never
// opens the database file: closing any descriptor of it would drop
// SQLite's POSIX locks for the whole process.
func tightenFiles(dbPath string) error {
	for _, p := range []string{dbPath, dbPath + "-wal", dbPath + "-shm", dbPath + "-journal", dbPath + "-lock"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stat %s: %w", p, err)
		}
		if st.Mode().Perm() != fileMode {
			if err := chmod(p, fileMode); err != nil {
				return err
			}
		}
	}
	return nil
}

func chmod(p string, mode fs.FileMode) error {
	if runtime.GOOS == "windows" {
		return nil // Windows has ACLs, not mode bits
	}
	if err := os.Chmod(p, mode); err != nil {
		return fmt.Errorf("chmod %s: %w", p, err)
	}
	return nil
}

// createDBFile creates an empty database file 0600 before SQLite opens it,
// so that SQLite, which gives -wal and -shm the database file's mode,
// creates them 0600 too.
func createDBFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", p, err)
	}
	return chmod(p, fileMode)
}

func fileExists(p string) (bool, error) {
	_, err := os.Stat(p)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, fmt.Errorf("stat %s: %w", filepath.Clean(p), err)
}
