package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// lifecycle is the storage life-cycle state the maintenance loop keeps:
// disk samples, admission, reserve, guard and cleanup history.
type lifecycle struct {
	dbBytes     atomic.Int64
	walBytes    atomic.Int64
	freeBytes   atomic.Int64
	pressure    atomic.Bool // payloads are not admitted
	lastWrite   atomic.Int64
	walTruncs   atomic.Int64
	walMax      atomic.Int64
	walStallMax atomic.Int64 // longest writer-side checkpoint, ns
	walRetryAt  atomic.Int64 // no writer-side truncation before this, Unix ns
	guarded     atomic.Bool
	gapRecorded atomic.Bool

	mu           sync.Mutex
	guardCause   string
	lastCleanup  CleanupResult
	cleanups     int
	deletedTotal int64
	reserveErr   string
}

func (l *lifecycle) setGuardCause(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.guardCause = err.Error()
}

func (l *lifecycle) noteCleanup(r CleanupResult) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastCleanup = r
	l.cleanups++
	l.deletedTotal += int64(r.Deleted)
}

// admitting reports whether new payloads are admitted.
func (l *lifecycle) admitting() bool { return !l.pressure.Load() }

// Lifecycle is the storage life cycle of an open store, for status pages.
type Lifecycle struct {
	// GuardLatched is true once a safety write failed even with the
	// reserve released: the store does no per-request work until an
	// operator deletes GuardPath and restarts.
	GuardLatched bool
	// GuardPath is the guard file's path (it exists only when latched).
	GuardPath string
	// GuardCause is the error that latched the guard ("" when not).
	GuardCause string
	// GapRecorded says whether a latched store has recorded its coverage
	// gap in the database yet.
	GapRecorded bool
	// ReserveBytes is what the reserve holds now; ReserveWanted its size.
	ReserveBytes, ReserveWanted int64
	// ReserveError is the last failure to allocate the reserve, if any.
	ReserveError string
	// Admitting is false while disk pressure keeps new payloads out.
	Admitting bool
	// DiskAdmission is the admission threshold for database plus WAL.
	DiskAdmission int64
	// DatabaseBytes and WALBytes are the files' sizes at the last sample;
	// WALMaxBytes the largest WAL seen; FreeBytes the free space of the
	// filesystem (-1: unknown).
	DatabaseBytes, WALBytes, WALMaxBytes, FreeBytes int64
	// WALTruncations counts the WAL truncations of maintenance;
	// WALStallMax is the longest the writer spent truncating between two
	// batches.
	WALTruncations int64
	WALStallMax    time.Duration
	// Retention is the idle age after which payloads may be deleted.
	Retention time.Duration
	// Barrier is the restart barrier as of its last sample.
	Barrier BarrierState
	// LastCleanup is the last cleanup run (zero At: none yet); Cleanups
	// and DeletedTotal count runs and deleted payloads since Open.
	LastCleanup  CleanupResult
	Cleanups     int
	DeletedTotal int64
	// OldestTouch is the touch time of the least recently touched payload
	// (zero when there is none); OldestAge is its age at the barrier's
	// last sample.
	OldestTouch time.Time
	OldestAge   time.Duration
	// Payloads is how many payloads the database holds.
	Payloads int64
}

// Lifecycle reports the storage life cycle. It reads the last samples
// and two indexed aggregates; it touches nothing, takes no clock sample
// and runs no checkpoint or cleanup.
func (s *Store) Lifecycle(ctx context.Context) (Lifecycle, error) {
	if s.isClosed() {
		return Lifecycle{}, ErrClosed
	}
	l := &s.life
	out := Lifecycle{
		GuardLatched:   l.guarded.Load(),
		GuardPath:      guardPath(s.path),
		GapRecorded:    l.gapRecorded.Load(),
		ReserveBytes:   s.reserve.size(),
		ReserveWanted:  s.reserve.want,
		Admitting:      l.admitting(),
		DiskAdmission:  s.opts.DiskAdmission,
		DatabaseBytes:  l.dbBytes.Load(),
		WALBytes:       l.walBytes.Load(),
		WALMaxBytes:    l.walMax.Load(),
		FreeBytes:      l.freeBytes.Load(),
		WALTruncations: l.walTruncs.Load(),
		WALStallMax:    time.Duration(l.walStallMax.Load()),
		Retention:      s.opts.Retention,
		Barrier:        s.barrier.state(),
	}
	l.mu.Lock()
	out.GuardCause, out.LastCleanup, out.Cleanups, out.DeletedTotal, out.ReserveError =
		l.guardCause, l.lastCleanup, l.cleanups, l.deletedTotal, l.reserveErr
	l.mu.Unlock()
	var oldest sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT min(touched_at), count(*) FROM payloads`).Scan(&oldest, &out.Payloads); err != nil {
		return out, fmt.Errorf("ledger: lifecycle: %w", err)
	}
	if oldest.Valid {
		out.OldestTouch = time.UnixMilli(oldest.Int64)
		out.OldestAge = out.Barrier.SampledAt.Sub(out.OldestTouch)
	}
	return out, nil
}
