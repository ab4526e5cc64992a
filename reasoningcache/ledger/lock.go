package ledger

import (
	"errors"
	"fmt"
	"os"
)

// ownerLock is the exclusive ownership of a database: an OS lock on the
// sidecar file <db>-lock, held for the life of the Store. The lock is on an
// open file description (flock on Unix, LockFileEx on Windows), so it is
// released by the kernel when the process dies, even by SIGKILL, and a
// second Store in the same process conflicts like a second process does.
type ownerLock struct {
	f *os.File
}

// errLockHeld is returned by tryLock when someone else holds the lock.
var errLockHeld = errors.New("lock held")

func acquireOwnerLock(path string) (*ownerLock, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := tryLock(f); err != nil {
		_ = f.Close()
		if errors.Is(err, errLockHeld) {
			return nil, ErrInUse
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &ownerLock{f: f}, nil
}

// release drops the lock. The lock file stays: removing it would race with
// a new owner that opened it already.
func (l *ownerLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the descriptor releases the lock
	l.f = nil
	return err
}
