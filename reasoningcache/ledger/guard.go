package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
)

// guardSuffix names the guard file beside the database.
const guardSuffix = ".guard"

// ErrGuarded is returned by write operations once the store has latched
// its guard, and (wrapped, with the remedy) by Open while a guard file
// exists. It matches ErrDisabled too: callers relay without the cache.
var ErrGuarded error = guardedError{}

type guardedError struct{}

func (guardedError) Error() string {
	return "ledger: the cache is off: a safety write failed on a full disk or an I/O error (guard latched)"
}

func (guardedError) Is(target error) bool { return target == ErrDisabled }

// guardFileError is Open's refusal while a guard file exists.
type guardFileError struct{ path string }

func (e guardFileError) Error() string {
	return fmt.Sprintf("ledger: %s exists: an earlier run stopped using the reasoning cache after a safety write failed "+
		"for lack of disk space or an I/O error; the relay runs without the cache until you free disk space, "+
		"delete %s and restart (what was cached before is then not replayed; the database is kept)", e.path, e.path)
}

func (e guardFileError) Is(target error) bool { return target == ErrGuarded }

// guardPath is the guard file of a database.
func guardPath(db string) string { return db + guardSuffix }

// latchGuard stops the store from doing per-request work after a safety
// write failed even with the reserve released: it writes the guard file,
// logs one error, and from then on every per-request write returns
// ErrGuarded, so requests are relayed without the cache. The coverage gap
// (unobserved traffic from now on) is recorded as soon as the database is
// writable again (maintenance retries it); the guard file makes the next
// start refuse the store until an operator deletes it.
func (s *Store) latchGuard(cause error) {
	if !s.life.guarded.CompareAndSwap(false, true) {
		return
	}
	s.life.setGuardCause(cause)
	gp := guardPath(s.path)
	text := fmt.Sprintf("The reasoning cache stopped using %s at %s:\n"+
		"a safety write failed for lack of disk space or an I/O error, even after the reserve was released:\n  %v\n"+
		"The relay went on answering requests without the cache.\n\n"+
		"To use the cache again: free disk space on the database's filesystem, delete this file and restart Caddy.\n"+
		"What was cached before is then not replayed (a coverage gap); the database itself is kept.\n",
		s.path, s.opts.Now().UTC().Format(time.RFC3339), cause)
	// Creating the file needs almost no room; its text is best effort.
	werr := os.WriteFile(gp, []byte(text), 0o600)
	if werr != nil {
		if f, err := os.OpenFile(gp, os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
			_ = f.Close()
			werr = nil
		}
	}
	s.log.Error("reasoning cache disabled: a safety write failed on a full disk or an I/O error even after releasing the reserve; "+
		"requests are relayed without the cache. Free disk space, delete the guard file and restart to use the cache again",
		zap.String("database", s.path), zap.String("guard", gp), zap.Error(cause), zap.NamedError("guard_write", werr))
}

// Guarded reports whether the store has latched its guard.
func (s *Store) Guarded() bool { return s.life.guarded.Load() }

// recordGap records the coverage gap of a guarded store, once. Called
// by maintenance until it succeeds.
func (s *Store) recordGap(ctx context.Context) {
	if !s.life.guarded.Load() || s.life.gapRecorded.Load() {
		return
	}
	err := s.submit(ctx, "guard_gap", true, func(w *wtx) error {
		_, err := w.ExecContext(w.ctx, `UPDATE meta SET coverage_gap = 1`)
		return err
	})
	if err == nil {
		s.life.gapRecorded.Store(true)
		s.log.Info("reasoning cache coverage gap recorded after the guard latched", zap.String("database", s.path))
	}
}

// checkGuardFile refuses a database whose guard file exists. Before
// refusing it records the coverage gap if the database is writable now
// (best effort), so that deleting the guard can never let records from
// before unobserved traffic be replayed.
func checkGuardFile(abs string, busy time.Duration) error {
	gp := guardPath(abs)
	if _, err := os.Stat(gp); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("ledger: open %s: guard file: %w", abs, err)
	}
	if ok, _ := fileExists(abs); ok {
		if db, err := sql.Open("sqlite", dsn(abs, busy, DefaultWALLimit)); err == nil {
			_, _ = db.Exec(`UPDATE meta SET coverage_gap = 1`)
			_ = db.Close()
		}
	}
	return guardFileError{path: gp}
}
