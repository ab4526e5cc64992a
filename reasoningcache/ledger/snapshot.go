package ledger

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sqlite "modernc.org/sqlite"
)

// Defaults of SnapshotOptions.
const (
	// DefaultSnapshotFreeMargin is the free space that must remain on the
	// snapshot directory's file system after the copy.
	DefaultSnapshotFreeMargin = 64 << 20
	// DefaultSnapshotMaxSource is the largest database Snapshot copies.
	DefaultSnapshotMaxSource = 256 << 20
	// snapshotStepPages is how many pages one backup step copies; between
	// steps the writer commits as usual.
	snapshotStepPages = 32
)

// ErrSnapshotRunning is returned by Snapshot while another snapshot of the
// same store is being taken.
var ErrSnapshotRunning = errors.New("ledger: a snapshot is already being taken")

// ErrSnapshotTooLarge is returned by Snapshot when the database exceeds
// the source ceiling or the directory lacks the free space.
var ErrSnapshotTooLarge = errors.New("ledger: not enough room for a snapshot")

// opsState is what the operations surface keeps on a Store: the copies
// Close must wait for, and the one-at-a-time latch of Snapshot.
type opsState struct {
	bg           sync.WaitGroup
	snapshotting atomic.Bool
}

// SnapshotOptions configure Snapshot.
type SnapshotOptions struct {
	// Dir is the private directory the snapshot is published in. It is
	// created 0700 when missing; an existing one must not be accessible
	// to other users, nor be a symbolic link.
	Dir string
	// FreeMargin is the free space that must remain after the copy
	// (DefaultSnapshotFreeMargin when 0).
	FreeMargin int64
	// MaxSourceBytes is the largest database copied
	// (DefaultSnapshotMaxSource when 0).
	MaxSourceBytes int64
	// OnStep, when set, is called after each backup step but the last,
	// with the pages copied so far and the total; for progress reports.
	// The copy waits while it runs.
	OnStep func(copied, total int64)
}

// SnapshotResult describes a published snapshot.
type SnapshotResult struct {
	// Path is the published file (mode 0400).
	Path string `json:"path"`
	// Bytes is its size.
	Bytes int64 `json:"bytes"`
	// Pages is how many database pages were copied.
	Pages int64 `json:"pages"`
	// Steps is how many backup steps (of 32 pages) the copy took.
	Steps int64 `json:"steps"`
	// TookMillis is how long the copy took, publication included.
	TookMillis int64 `json:"took_ms"`
}

// Snapshot copies the live database into a new file in opts.Dir with
// SQLite's online backup API, through one of the owner's own connections,
// 32 pages at a time inside one read transaction: the copy is one
// consistent state while requests keep committing. The copy's cache secret
// is zeroed (it is an inspection export, not a recovery backup: it cannot
// be used to key scopes, and opening it as a ledger makes every earlier
// scope unreachable). The file is published, owner-read-only, only once
// complete; a failed copy leaves nothing behind. Earlier snapshots are
// never removed. Only one snapshot runs at a time (ErrSnapshotRunning);
// Close waits for a running one.
func (s *Store) Snapshot(ctx context.Context, opts SnapshotOptions) (res SnapshotResult, err error) {
	if opts.FreeMargin <= 0 {
		opts.FreeMargin = DefaultSnapshotFreeMargin
	}
	if opts.MaxSourceBytes <= 0 {
		opts.MaxSourceBytes = DefaultSnapshotMaxSource
	}
	if opts.Dir == "" {
		return res, errors.New("ledger: snapshot: no directory")
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return res, ErrClosed
	}
	if !s.ops.snapshotting.CompareAndSwap(false, true) {
		s.mu.RUnlock()
		return res, ErrSnapshotRunning
	}
	s.ops.bg.Add(1)
	s.mu.RUnlock()
	defer s.ops.bg.Done()
	defer s.ops.snapshotting.Store(false)

	start := time.Now()
	dir, err := privateDir(opts.Dir)
	if err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return res, fmt.Errorf("ledger: snapshot: begin: %w", err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()
	var pageSize, pageCount int64
	// the first read starts the transaction's snapshot
	if err := conn.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM meta").Scan(new(int)); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pageCount); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	size := pageSize * pageCount
	if size > opts.MaxSourceBytes {
		return res, fmt.Errorf("%w: the database holds %d bytes, over the snapshot ceiling of %d bytes", ErrSnapshotTooLarge, size, opts.MaxSourceBytes)
	}
	if free, err := freeBytes(dir); err != nil {
		return res, fmt.Errorf("ledger: snapshot: free space of %s: %w", dir, err)
	} else if free >= 0 && free < size+opts.FreeMargin {
		return res, fmt.Errorf("%w: %s has %d bytes free; the copy needs %d plus a margin of %d", ErrSnapshotTooLarge, dir, free, size, opts.FreeMargin)
	}

	name, err := snapshotName(time.Now())
	if err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	final := filepath.Join(dir, name)
	tmp := filepath.Join(dir, "."+name+".partial")
	if err := createExclusive(tmp); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	published := false
	defer func() {
		if !published {
			_ = os.Remove(tmp)
			_ = os.Remove(tmp + "-journal")
		}
	}()
	steps, err := backupInto(ctx, conn, tmp, opts.OnStep)
	if err != nil {
		return res, fmt.Errorf("ledger: snapshot: copy: %w", err)
	}
	res.Steps = steps
	if err := scrubSecret(ctx, tmp, s.secret); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	if err := publish(tmp, final, 0o400); err != nil {
		return res, fmt.Errorf("ledger: snapshot: %w", err)
	}
	published = true
	res.Path, res.Pages, res.Bytes = final, pageCount, fileSize(final)
	res.TookMillis = time.Since(start).Milliseconds()
	return res, nil
}

// SnapshotRunning reports whether a snapshot is being copied.
func (s *Store) SnapshotRunning() bool { return s.ops.snapshotting.Load() }

// backupInto copies the database conn reads into the file at dst with the
// online backup API, snapshotStepPages at a time, and returns the number
// of steps. conn must be inside a read transaction, so that the copy is
// one consistent state and is never restarted by concurrent commits.
func backupInto(ctx context.Context, conn *sql.Conn, dst string, onStep func(copied, total int64)) (steps int64, err error) {
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(interface {
			NewBackup(string) (*sqlite.Backup, error)
		})
		if !ok {
			return fmt.Errorf("the SQLite driver offers no backup API (%T)", dc)
		}
		bk, err := b.NewBackup(dst)
		if err != nil {
			return err
		}
		for {
			more, err := bk.Step(snapshotStepPages)
			steps++
			if err == nil && more && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err != nil {
				_ = bk.Finish()
				return err
			}
			if !more {
				return bk.Finish()
			}
			if onStep != nil {
				total := int64(bk.PageCount())
				onStep(total-int64(bk.Remaining()), total)
			}
			runtime.Gosched()
		}
	})
	return steps, err
}

// scrubSecret zeroes the cache secret in the database file at p, in place
// and without a journal that could keep the old page, and checks that the
// secret's bytes appear nowhere in the file (an older copy on a free page
// would); if they do, the file is vacuumed and checked again.
func scrubSecret(ctx context.Context, p string, secret []byte) error {
	db, err := sql.Open("sqlite", p+"?_pragma=journal_mode(MEMORY)&_pragma=secure_delete(1)")
	if err != nil {
		return fmt.Errorf("open copy: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `UPDATE meta SET secret = zeroblob(32)`); err != nil {
		return fmt.Errorf("omit the secret: %w", err)
	}
	for attempt := 0; ; attempt++ {
		found, err := fileContains(p, secret)
		if err != nil {
			return err
		}
		if !found {
			return db.Close()
		}
		if attempt > 0 {
			return errors.New("the copy still holds the cache secret after VACUUM")
		}
		if _, err := db.ExecContext(ctx, "VACUUM"); err != nil {
			return fmt.Errorf("vacuum the copy: %w", err)
		}
	}
}

// fileContains reports whether needle occurs in the file at p.
func fileContains(p string, needle []byte) (bool, error) {
	if len(needle) == 0 {
		return false, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return false, err
	}
	defer f.Close()
	buf := make([]byte, 0, 1<<20+len(needle))
	chunk := make([]byte, 1<<20)
	for {
		n, err := f.Read(chunk)
		buf = append(buf, chunk[:n]...)
		if bytes.Contains(buf, needle) {
			return true, nil
		}
		if keep := len(needle) - 1; len(buf) > keep {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
	}
}

// privateDir makes dir absolute, creates it 0700 when missing and refuses
// a symbolic link, a non-directory, or a directory other users can reach.
func privateDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if strings.ContainsAny(abs, "?#") {
		return "", fmt.Errorf("%s: the path must not contain '?' or '#'", abs)
	}
	if err := ensureDir(abs); err != nil {
		return "", err
	}
	st, err := os.Lstat(abs)
	if err != nil {
		return "", err
	}
	switch {
	case st.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("%s is a symbolic link; use a real directory", abs)
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a directory", abs)
	case runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0:
		return "", fmt.Errorf("%s is accessible to other users (mode %s); make it 0700", abs, st.Mode().Perm())
	}
	return abs, nil
}

// snapshotName is a new snapshot's file name: UTC time and a random
// suffix, so that names sort by time and never collide.
func snapshotName(t time.Time) (string, error) {
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return "reasoning-cache-snapshot-" + t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(r[:]) + ".sqlite", nil
}

// createExclusive creates an empty file 0600 that must not exist yet.
func createExclusive(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return chmod(p, fileMode)
}

// publish makes the finished file at tmp durable with the given mode and
// gives it its final name, never replacing an existing file: it is linked
// (which fails if final exists), then tmp is removed and the directory
// synced.
func publish(tmp, final string, mode fs.FileMode) error {
	if err := syncFile(tmp); err != nil {
		return err
	}
	if err := chmod(tmp, mode); err != nil {
		return err
	}
	if err := os.Link(tmp, final); err != nil {
		return fmt.Errorf("publish %s: %w", final, err)
	}
	if err := os.Remove(tmp); err != nil {
		return err
	}
	return syncDir(filepath.Dir(final))
}

// syncFile flushes the file at p to stable storage.
func syncFile(p string) error {
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("sync %s: %w", p, err)
	}
	return f.Close()
}

// syncDir flushes a directory's entries (a new, renamed or removed name).
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
