package ledger

import (
	"context"
	"fmt"
	"os"
	"time"
)

// walIdle is how long the writer must have been idle before maintenance
// truncates the WAL to zero.
var walIdle = 2 * time.Second

// walRetryPause is how long the writer waits before it tries again a
// truncation that readers kept from finishing.
const walRetryPause = 100 * time.Millisecond

// truncateBusy bounds how long a truncating checkpoint waits for readers
// (and so how long it can hold up the writer behind it).
const truncateBusy = 250 * time.Millisecond

// fileSize returns a file's size, 0 if it does not exist.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

// maintainWAL keeps the WAL bounded without a checkpoint on any commit
// path: a PASSIVE checkpoint (it never blocks the writer) every tick while
// the WAL has frames; a TRUNCATE checkpoint when the writer has been idle
// for walIdle; and, when the WAL file has grown past Options.WALLimit, a
// request to the writer to truncate it between two batches (the writer
// also checks the size itself after each batch). The PASSIVE passes copy
// most frames beforehand, so the truncation holds the writer briefly.
// SQLite restarts a fully checkpointed WAL at the next commit and, with
// journal_size_limit, shrinks it to WALLimit then.
func (s *Store) maintainWAL(ctx context.Context) error {
	size := fileSize(s.path + "-wal")
	s.life.walBytes.Store(size)
	if size > s.life.walMax.Load() {
		s.life.walMax.Store(size)
	}
	if size == 0 {
		return nil
	}
	frames, done, err := s.Checkpoint(ctx)
	if err != nil {
		return err
	}
	idle := time.Since(time.Unix(0, s.life.lastWrite.Load())) >= walIdle
	switch {
	case idle && frames == done:
		if err := s.truncateWAL(ctx); err != nil {
			return err
		}
		s.life.walBytes.Store(fileSize(s.path + "-wal"))
	case size > s.opts.WALLimit:
		// Under sustained writes a checkpoint from another connection
		// rarely finds the gap between two batches: the writer truncates
		// the WAL itself, between batches.
		s.walWanted.Store(true)
	}
	return nil
}

// writerCheckpoint runs on the writer goroutine between two batches, when
// maintenance asked for it: a TRUNCATE checkpoint on the writer's own
// connection, which holds no transaction then, with a short busy timeout
// for readers. Most frames were already copied by PASSIVE checkpoints, so
// the batches queued behind it wait briefly; no commit waits for it.
func (s *Store) writerCheckpoint() {
	wanted := s.walWanted.Swap(false)
	if s.opts.walUnbounded {
		return
	}
	if !wanted {
		// One stat per batch (microseconds, against a commit's fsync)
		// keeps the bound at WALLimit plus about one batch, instead of
		// plus one maintenance tick of writes.
		if s.life.walRetryAt.Load() > time.Now().UnixNano() || fileSize(s.path+"-wal") <= s.opts.WALLimit {
			return
		}
	}
	ctx := context.Background()
	start := time.Now()
	c := s.wconn
	if _, err := c.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", truncateBusy.Milliseconds())); err != nil {
		return
	}
	var busy, frames, done int
	err := c.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done)
	_, _ = c.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", s.opts.BusyTimeout.Milliseconds()))
	if err == nil && busy == 0 {
		s.life.walTruncs.Add(1)
	} else {
		// Readers kept it from finishing: let a few batches through
		// before trying again.
		s.life.walRetryAt.Store(time.Now().Add(walRetryPause).UnixNano())
	}
	if d := time.Since(start).Nanoseconds(); d > s.life.walStallMax.Load() {
		s.life.walStallMax.Store(d)
	}
}

// truncateWAL runs a TRUNCATE checkpoint on a pooled connection whose
// busy timeout is short, so that it gives up rather than hold the writer
// behind a long reader; the next tick tries again.
func (s *Store) truncateWAL(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("ledger: truncate WAL: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", truncateBusy.Milliseconds())); err != nil {
		return fmt.Errorf("ledger: truncate WAL: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA busy_timeout = %d", s.opts.BusyTimeout.Milliseconds()))
	}()
	var busy, frames, done int
	if err := conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &frames, &done); err != nil {
		return fmt.Errorf("ledger: truncate WAL: %w", err)
	}
	if busy == 0 {
		s.life.walTruncs.Add(1)
	}
	return nil
}
