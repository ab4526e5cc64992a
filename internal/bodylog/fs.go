package bodylog

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ensureDir makes sure p is a real directory (not a symbolic link) with
// mode 0700, creating it if needed.
func ensureDir(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(p, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		fi, err = os.Lstat(p)
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link", filepath.Base(p))
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", filepath.Base(p))
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(p, 0o700)
	}
	return nil
}

// openFile opens p for appending (creating it 0600; with excl, it must not
// exist), refusing symbolic links and anything but a regular file.
func openFile(p string, excl bool) (*os.File, error) {
	flags := os.O_WRONLY | os.O_APPEND | os.O_CREATE | oNoFollow | oNonBlock
	if excl {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(p, flags, 0o600)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	if err == nil && fi.Mode().Perm() != 0o600 {
		err = f.Chmod(0o600)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
