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
// path: a PASSIVE checkpoint (it never blocks the writer) whenever the WAL
// has frames, and a TRUNCATE checkpoint when the WAL file has grown past
// Options.WALLimit or the writer has been idle for walIdle. The PASSIVE
// pass first copies almost everything, so the TRUNCATE that follows holds
// the write lock only briefly. SQLite restarts a fully checkpointed WAL
// at the next commit and, with journal_size_limit, shrinks it to
// WALLimit then.
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
	if size <= s.opts.WALLimit && !(idle && frames == done) {
		return nil
	}
	if err := s.truncateWAL(ctx); err != nil {
		return err
	}
	s.life.walBytes.Store(fileSize(s.path + "-wal"))
	return nil
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
