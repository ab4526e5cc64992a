package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrBlocked is returned by Open for a database whose backup or restore
// did not finish: a <database>.blocked file lies beside it.
var ErrBlocked = errors.New("ledger: the database is an unfinished copy")

// ErrDestinationExists is returned by Backup and Restore when the
// destination (or one of its sidecar files) exists: they never overwrite.
var ErrDestinationExists = errors.New("ledger: the destination exists")

// blockedSuffix names the file that keeps a copy from being opened until
// it is complete and durable.
const blockedSuffix = ".blocked"

const crashBackupCopied = "backup.copied" // the copy is durable, .blocked not yet removed

// CopyResult describes a finished Backup or Restore.
type CopyResult struct {
	// Source and Destination are the absolute paths copied.
	Source      string `json:"source"`
	Destination string `json:"destination"`
	// Bytes is the size of the new database.
	Bytes int64 `json:"bytes"`
	// Pages is how many pages were copied.
	Pages int64 `json:"pages"`
	// FormatVersion is the copy's schema version.
	FormatVersion int64 `json:"format_version"`
	// TookMillis is how long the copy took.
	TookMillis int64 `json:"took_ms"`
}

// Backup copies the ledger at database, which no relay may have open, into
// a new database at output. See Restore: the two differ only in which end
// is the live ledger's path.
func Backup(database, output string) (CopyResult, error) {
	return copyLedger("backup", database, output)
}

// Restore copies the backup at backup into a new ledger at database, which
// must not exist.
//
// Both Backup and Restore take the ownership lock of both ends (so a
// running relay is refused, and none can open either end meanwhile),
// refuse an existing destination, and write <destination>.blocked before
// anything else: Open refuses the destination until the copy, its
// integrity check and its metadata are durable and the .blocked file is
// removed. A copy that fails is removed again; a killed copy leaves a
// destination that cannot be used by mistake: delete it and its .blocked
// file and run the command again.
//
// The copy keeps the cache secret (so prompt_cache_key values and scope
// identities stay stable) and records a coverage gap: the first enabled
// open of the copy advances every scope's generation, which quarantines
// everything recorded before the copy (the relay cannot know what happened
// between the copy and its use; markers survive, payloads are kept until
// retention removes them).
func Restore(backup, database string) (CopyResult, error) {
	return copyLedger("restore", backup, database)
}

func copyLedger(op, src, dst string) (res CopyResult, err error) {
	start := time.Now()
	if src, err = cleanPath(src); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if dst, err = cleanPath(dst); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	res.Source, res.Destination = src, dst
	if src == dst {
		return res, fmt.Errorf("ledger: %s: source and destination are the same file %s", op, src)
	}
	if ok, err := fileExists(src); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	} else if !ok {
		return res, fmt.Errorf("ledger: %s: %s does not exist", op, src)
	}
	if err := checkNotBlocked(src); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if err := ensureDir(filepath.Dir(dst)); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	// the destination's lock first: a relay running on it is the clearer
	// message than "exists"
	dlock, err := lockForCopy(op, dst)
	if err != nil {
		return res, err
	}
	defer func() { _ = dlock.release() }()
	for _, p := range []string{dst, dst + "-wal", dst + "-shm", dst + "-journal", dst + blockedSuffix} {
		if ok, err := fileExists(p); err != nil {
			return res, fmt.Errorf("ledger: %s: %w", op, err)
		} else if ok {
			return res, fmt.Errorf("%w: %s: %s exists; %s never overwrites, choose a new path", ErrDestinationExists, op, p, op)
		}
	}
	slock, err := lockForCopy(op, src)
	if err != nil {
		return res, err
	}
	defer func() { _ = slock.release() }()

	blocked := dst + blockedSuffix
	if err := createExclusive(blocked); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if err := createExclusive(dst); err != nil {
		_ = os.Remove(blocked)
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	// a copy that fails here is removed (this process created both files
	// and holds the destination's lock); one that is killed stays blocked
	defer func() {
		if err != nil {
			for _, p := range []string{dst, dst + "-wal", dst + "-shm", dst + "-journal", blocked} {
				_ = os.Remove(p)
			}
		}
	}()
	ctx := context.Background()
	if res.Pages, err = copyDatabase(ctx, src, dst); err != nil {
		return res, fmt.Errorf("ledger: %s: copy %s to %s: %w", op, src, dst, err)
	}
	if res.FormatVersion, err = sealCopy(ctx, dst); err != nil {
		return res, fmt.Errorf("ledger: %s: %s: %w", op, dst, err)
	}
	if err := tightenFiles(dst); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if err := syncFile(dst); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	crashPoint(crashBackupCopied)
	if err := os.Remove(blocked); err != nil {
		return res, fmt.Errorf("ledger: %s: unblock %s: %w", op, dst, err)
	}
	if err := syncDir(filepath.Dir(dst)); err != nil {
		return res, fmt.Errorf("ledger: %s: %w", op, err)
	}
	res.Bytes = fileSize(dst)
	res.TookMillis = time.Since(start).Milliseconds()
	return res, nil
}

// lockForCopy takes the ownership lock of a database for a copy.
func lockForCopy(op, p string) (*ownerLock, error) {
	l, err := acquireOwnerLock(p + "-lock")
	if errors.Is(err, ErrInUse) {
		return nil, fmt.Errorf("%w: %s: %s is open in a running relay; stop that Caddy first (for a live inspection copy use `caddy reasoning-relay snapshot`)", ErrInUse, op, p)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %s: %w", op, err)
	}
	return l, nil
}

// copyDatabase copies src into the (empty) file dst with the backup API
// and returns the number of pages copied. src must be a ledger this build
// can read.
func copyDatabase(ctx context.Context, src, dst string) (int64, error) {
	db, err := sql.Open("sqlite", src+"?_pragma=busy_timeout(5000)&_pragma=query_only(1)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return 0, err
	}
	defer func() { _, _ = conn.ExecContext(ctx, "ROLLBACK") }()
	var version, metaRows, pages int64
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, fmt.Errorf("not a readable SQLite database: %w", err)
	}
	if version < 1 || version > int64(formatVersion()) {
		return 0, fmt.Errorf("not a ledger this build can use (format %d, this build knows 1 to %d)", version, formatVersion())
	}
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM meta").Scan(&metaRows); err != nil || metaRows != 1 {
		return 0, fmt.Errorf("not a ledger: no meta row (%v)", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return 0, err
	}
	if _, err := backupInto(ctx, conn, dst, nil); err != nil {
		return 0, err
	}
	return pages, nil
}

// sealCopy checks the new copy and records its coverage gap, then
// checkpoints it so that it is one self-contained file.
func sealCopy(ctx context.Context, dst string) (int64, error) {
	db, err := sql.Open("sqlite", dst+"?_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	var check string
	if err := db.QueryRowContext(ctx, "PRAGMA integrity_check").Scan(&check); err != nil {
		return 0, fmt.Errorf("integrity check: %w", err)
	}
	if check != "ok" {
		return 0, fmt.Errorf("integrity check of the copy failed: %s", check)
	}
	if _, err := db.ExecContext(ctx, `UPDATE meta SET coverage_gap = 1, owner_pid = 0`); err != nil {
		return 0, fmt.Errorf("record the coverage gap: %w", err)
	}
	var version int64
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		return 0, fmt.Errorf("checkpoint: %w", err)
	}
	return version, db.Close()
}

// checkNotBlocked refuses a database with a .blocked file beside it.
func checkNotBlocked(abs string) error {
	ok, err := fileExists(abs + blockedSuffix)
	if err != nil {
		return err
	}
	if ok {
		return fmt.Errorf("%w: %s%s exists: a backup or restore into %s did not finish; delete both and run it again (or point the relay at another database)",
			ErrBlocked, abs, blockedSuffix, abs)
	}
	return nil
}

// cleanPath makes p absolute and refuses what the SQLite driver would
// read as URI parameters.
func cleanPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	abs = filepath.Clean(abs)
	if strings.ContainsAny(abs, "?#") {
		return "", fmt.Errorf("%s: the path must not contain '?' or '#'", abs)
	}
	if st, err := os.Lstat(abs); err == nil && st.Mode()&fs.ModeSymlink != 0 {
		return "", fmt.Errorf("%s is a symbolic link; name the real file", abs)
	}
	return abs, nil
}
