package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// MaxBundleBytes caps a bundle (and a comparison) on disk.
const MaxBundleBytes = 16 << 20

// ErrTooLarge is returned when a file or document exceeds its cap.
var ErrTooLarge = errors.New("exceeds the size cap")

// Canonical encodes v as indented JSON with object keys sorted at every
// level, numbers kept as written and no HTML escaping, ending in a newline.
// The same value always encodes to the same bytes.
func Canonical(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(tree); err != nil { // maps encode with sorted keys
		return nil, err
	}
	return out.Bytes(), nil
}

// WriteFileAtomic writes data to path: a temporary file created 0600 with
// O_EXCL next to it, synced, then renamed over path, and the folder synced.
// A symbolic link (or anything but a regular file) at path is refused, and
// data larger than MaxBundleBytes too. It returns the hex SHA-256 of data.
func WriteFileAtomic(path string, data []byte) (string, error) {
	if len(data) > MaxBundleBytes {
		return "", fmt.Errorf("write %s: %d bytes %w of %d bytes", path, len(data), ErrTooLarge, MaxBundleBytes)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", fmt.Errorf("write %s: the target is a symbolic link", path)
		}
		if !fi.Mode().IsRegular() {
			return "", fmt.Errorf("write %s: the target is not a regular file", path)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	var rnd [8]byte
	if _, err := randRead(rnd[:]); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	tmp := filepath.Join(dir, "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if err := f.Chmod(0o600); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), nil
}

// openRegular opens path for reading without following a symbolic link
// at its last component, and checks that it is a regular file of at most
// max bytes.
func openRegular(path string, max int64) (*os.File, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow|oNonBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err == nil && fi.Size() > max {
		err = fmt.Errorf("%d bytes %w of %d bytes", fi.Size(), ErrTooLarge, max)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// readFileCapped reads a whole regular file of at most max bytes, without
// following a symbolic link.
func readFileCapped(path string, max int64) ([]byte, error) {
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return nil, errors.New("is a symbolic link")
	}
	f, _, err := openRegular(path, max)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > max {
		return nil, ErrTooLarge
	}
	return data, nil
}
