package ledger

import (
	"fmt"
	"os"
	"sync"
)

// reserveSuffix names the reserve file beside the database.
const reserveSuffix = ".reserve"

// reserve is a physically allocated file beside the database. Releasing
// it frees its bytes on the ledger's filesystem for one retry of a
// safety write that failed for lack of room; it is allocated again once
// the filesystem has room for it twice over.
type reserve struct {
	mu   sync.Mutex
	path string
	want int64
	held int64
}

// ensure allocates the reserve if it is not held. It leaves no partial
// file behind on failure.
func (r *reserve) ensure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held >= r.want {
		return nil
	}
	f, err := os.OpenFile(r.path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return fmt.Errorf("ledger: reserve %s: %w", r.path, err)
	}
	err = allocate(f, r.want)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(r.path)
		return fmt.Errorf("ledger: reserve %s: %w", r.path, err)
	}
	r.held = r.want
	return nil
}

// release deletes the reserve and returns how many bytes it held.
func (r *reserve) release() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held == 0 {
		return 0
	}
	if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
		// Truncating frees the blocks even if the name cannot go.
		_ = os.Truncate(r.path, 0)
	}
	n := r.held
	r.held = 0
	return n
}

// size returns the bytes the reserve holds now.
func (r *reserve) size() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.held
}

// writeZeros writes n zero bytes to f from its start.
func writeZeros(f *os.File, n int64) error {
	buf := make([]byte, min(n, 1<<20))
	for off := int64(0); off < n; {
		k := min(int64(len(buf)), n-off)
		if _, err := f.WriteAt(buf[:k], off); err != nil {
			return err
		}
		off += k
	}
	return nil
}
