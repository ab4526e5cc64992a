package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Default limits and sizes; see Options.
const (
	DefaultMaxPayloadBytes = 16 << 20
	DefaultMaxPlanSteps    = 256
	DefaultMaxPlanBytes    = 256 << 10
	DefaultMaxCandidates   = 16
	DefaultMaxBatch        = 256
	DefaultHotCacheBytes   = 32 << 20
	DefaultHotCacheEntries = 4096
	DefaultBusyTimeout     = 5 * time.Second
)

// Options configure Open. The zero value is usable: an enabled store with
// the defaults above.
type Options struct {
	// Disabled opens the store in disabled mode: if the database does not
	// exist, Open creates nothing and returns ErrNoDatabase; if it does,
	// the store takes ownership, recovers, records a coverage gap and then
	// refuses per-request writes with ErrDisabled.
	Disabled bool
	// MaxPayloadBytes bounds one payload's original output JSON.
	MaxPayloadBytes int64
	// MaxPlanSteps bounds the number of steps of one plan.
	MaxPlanSteps int
	// MaxPlanBytes bounds one plan's JSON encoding.
	MaxPlanBytes int
	// MaxCandidates bounds how many observations Candidates returns.
	MaxCandidates int
	// MaxBatch bounds how many operations share one transaction.
	MaxBatch int
	// HotCacheBytes and HotCacheEntries bound the in-memory payload cache.
	// A negative HotCacheBytes disables it.
	HotCacheBytes   int64
	HotCacheEntries int
	// BusyTimeout is SQLite's busy timeout for every connection.
	BusyTimeout time.Duration
	// Logger receives the store's few log lines. Default: no logging.
	Logger *zap.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
}

func (o *Options) setDefaults() {
	if o.MaxPayloadBytes <= 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.MaxPlanSteps <= 0 {
		o.MaxPlanSteps = DefaultMaxPlanSteps
	}
	if o.MaxPlanBytes <= 0 {
		o.MaxPlanBytes = DefaultMaxPlanBytes
	}
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = DefaultMaxCandidates
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.HotCacheBytes == 0 {
		o.HotCacheBytes = DefaultHotCacheBytes
	}
	if o.HotCacheEntries <= 0 {
		o.HotCacheEntries = DefaultHotCacheEntries
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Store is an open ledger. It is safe for concurrent use. Close it exactly
// once; operations after Close return ErrClosed.
type Store struct {
	path   string
	opts   Options
	log    *zap.Logger
	db     *sql.DB    // pooled connections for reads and checkpoints
	wconn  *sql.Conn  // the writer goroutine's connection
	wstmts *stmtCache // statements prepared on wconn, used by the writer only
	lock   *ownerLock
	secret []byte
	cache  *hotCache

	enabled atomic.Bool
	reqs    chan *request
	quit    chan struct{}
	done    chan struct{}

	mu     sync.RWMutex // held shared while submitting, exclusively by Close
	closed bool

	closeOnce sync.Once
	closeErr  error

	stats storeStats
}

// dsn returns the connection string: every pooled connection gets WAL,
// foreign keys, synchronous=FULL and no automatic checkpoint.
func dsn(path string, busy time.Duration) string {
	return path + "?" + strings.Join([]string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busy.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(FULL)",
		"_pragma=wal_autocheckpoint(0)",
		"_txlock=immediate",
	}, "&")
}

// Open opens (creating if needed, unless disabled) the ledger at path,
// takes exclusive ownership, migrates the schema, recovers what an earlier
// process left unresolved and applies the coverage-gap rules, all before
// it returns. See Options.Disabled.
func Open(path string, opts Options) (*Store, error) {
	opts.setDefaults()
	if path == "" {
		return nil, errors.New("ledger: open: empty database path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	abs = filepath.Clean(abs)
	if strings.ContainsAny(abs, "?#") {
		return nil, fmt.Errorf("ledger: open %s: the path must not contain '?' or '#'", abs)
	}
	if opts.Disabled {
		ok, err := fileExists(abs)
		if err != nil {
			return nil, fmt.Errorf("ledger: open: %w", err)
		}
		if !ok {
			return nil, ErrNoDatabase
		}
	}
	if err := ensureDir(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", abs, err)
	}
	warnLooseDir(filepath.Dir(abs), opts.Logger)
	lock, err := acquireOwnerLock(abs + "-lock")
	if err != nil {
		if errors.Is(err, ErrInUse) {
			return nil, inUseError{path: abs}
		}
		return nil, fmt.Errorf("ledger: open %s: %w", abs, err)
	}
	s, err := open(abs, lock, opts)
	if err != nil {
		_ = lock.release()
		return nil, err
	}
	return s, nil
}

func open(abs string, lock *ownerLock, opts Options) (*Store, error) {
	if err := createDBFile(abs); err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", abs, err)
	}
	db, err := sql.Open("sqlite", dsn(abs, opts.BusyTimeout))
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", abs, err)
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)

	ctx := context.Background()
	fail := func(format string, err error) (*Store, error) {
		_ = db.Close()
		return nil, fmt.Errorf("ledger: open %s: "+format+": %w", abs, err)
	}
	wconn, err := db.Conn(ctx)
	if err != nil {
		return fail("connect", err)
	}
	if err := migrate(ctx, wconn); err != nil {
		_ = wconn.Close()
		return fail("migrate", err)
	}
	s := &Store{
		path:   abs,
		opts:   opts,
		log:    opts.Logger,
		db:     db,
		wconn:  wconn,
		wstmts: newStmtCache(wconn),
		lock:   lock,
		cache:  newHotCache(opts.HotCacheBytes, opts.HotCacheEntries),
		reqs:   make(chan *request, opts.MaxBatch),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	rec, err := s.startup(ctx, !opts.Disabled)
	if err != nil {
		_ = wconn.Close()
		return fail("startup", err)
	}
	if err := tightenFiles(abs); err != nil {
		_ = wconn.Close()
		return fail("permissions", err)
	}
	s.enabled.Store(!opts.Disabled)
	go s.writer()
	s.log.Info("ledger opened",
		zap.String("path", abs),
		zap.Bool("enabled", !opts.Disabled),
		zap.Int("recovered_intents", rec.intents),
		zap.Int("poison_markers", rec.markers),
		zap.Bool("coverage_gap_consumed", rec.gapConsumed))
	return s, nil
}

// Path returns the cleaned absolute database path.
func (s *Store) Path() string { return s.path }

// Enabled reports whether the store accepts per-request writes.
func (s *Store) Enabled() bool { return s.enabled.Load() }

// MaxPayloadBytes returns the largest payload the store admits
// (Options.MaxPayloadBytes with its default applied).
func (s *Store) MaxPayloadBytes() int64 { return s.opts.MaxPayloadBytes }

// Secret returns a copy of the cache-local secret (32 bytes) used to key
// scope HMACs. It never leaves the database otherwise.
func (s *Store) Secret() []byte { return append([]byte(nil), s.secret...) }

// Close stops the writer after it has answered every accepted operation,
// checkpoints and truncates the WAL, closes the database and releases
// ownership. It is safe to call more than once; later calls return the
// first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.quit)
		<-s.done
		s.wstmts.close()
		var errs []error
		if _, err := s.wconn.ExecContext(context.Background(), "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			errs = append(errs, fmt.Errorf("checkpoint: %w", err))
		}
		if err := s.wconn.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.db.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := s.lock.release(); err != nil {
			errs = append(errs, err)
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("ledger: close %s: %w", s.path, err)
		}
		s.log.Info("ledger closed", zap.String("path", s.path))
	})
	return s.closeErr
}

// Checkpoint copies committed WAL frames into the database file without
// blocking writers (PASSIVE), so that the WAL does not grow without bound.
// Call it from a background loop, never on a request path: SQLite's
// automatic checkpoint is disabled because it stalls the committing
// request. It returns the WAL size and the number of frames checkpointed.
func (s *Store) Checkpoint(ctx context.Context) (walFrames, checkpointed int, err error) {
	if s.isClosed() {
		return 0, 0, ErrClosed
	}
	var busy int
	row := s.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
	if err := row.Scan(&busy, &walFrames, &checkpointed); err != nil {
		return 0, 0, fmt.Errorf("ledger: checkpoint %s: %w", s.path, err)
	}
	return walFrames, checkpointed, nil
}

// RunCheckpoints checkpoints every interval until ctx is done or the
// store is closed. It is the background loop the Caddy app runs.
func (s *Store) RunCheckpoints(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _, err := s.Checkpoint(ctx)
			if errors.Is(err, ErrClosed) || ctx.Err() != nil {
				return
			}
			if err != nil {
				s.log.Warn("ledger checkpoint failed", zap.Error(err))
			}
		}
	}
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

func warnLooseDir(dir string, log *zap.Logger) {
	if runtime.GOOS == "windows" {
		return
	}
	st, err := os.Stat(dir)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return
	}
	log.Warn("ledger folder is accessible to other users; the database files themselves are 0600",
		zap.String("dir", dir), zap.String("mode", st.Mode().Perm().String()))
}
