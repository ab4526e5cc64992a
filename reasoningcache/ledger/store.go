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
	DefaultMaxPlanBlocks   = 256
	DefaultMaxPlanBytes    = 256 << 10
	DefaultMaxCandidates   = 16
	DefaultMaxBatch        = 256
	DefaultHotCacheBytes   = 32 << 20
	DefaultHotCacheEntries = 4096
	DefaultBusyTimeout     = 5 * time.Second
	DefaultRetention       = 30 * 24 * time.Hour
	MinRetention           = 30 * 24 * time.Hour
	DefaultDiskAdmission   = 1 << 30
	DefaultReserveBytes    = 64 << 20
	MinReserveBytes        = 64 << 10
	DefaultWALLimit        = 64 << 20
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
	// MaxPlanBlocks bounds the number of blocks of one plan.
	MaxPlanBlocks int
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
	// Now is the wall clock. Default: time.Now. Ignored when Clock is set.
	Now func() time.Time
	// Clock is the time source, wall and monotonic, for rows, retention
	// and the restart barrier. Default: Now with the real monotonic clock.
	Clock Clock

	// Retention is how long a payload must have gone untouched before
	// cleanup may delete it. Default and minimum: 30 days.
	Retention time.Duration
	// DiskAdmission is the size of database plus WAL, in bytes, above
	// which new payloads are not admitted (observations, markers and
	// intents still are). Default: 1 GiB.
	DiskAdmission int64
	// ReserveBytes is the size of the physically allocated reserve file
	// beside the database, released to let a safety write through on a
	// full disk. Default: 64 MiB; minimum 64 KiB.
	ReserveBytes int64
	// WALLimit is the WAL size, in bytes, above which the background
	// maintenance truncates the WAL, and the size SQLite truncates it to
	// after a reset (journal_size_limit). Default: 64 MiB.
	WALLimit int64

	// manualMaintenance (tests only) starts no maintenance loop: the
	// test calls maintain itself.
	manualMaintenance bool
	// walUnbounded (soak comparison only) turns off the writer's WAL
	// bound, as before the WAL was bounded.
	walUnbounded bool

	// ObserveBatch, when set, is called by the writer after each
	// transaction with its number of operations, how long it took from
	// BEGIN to the end of COMMIT (or ROLLBACK) and whether it committed.
	// It runs on the writer goroutine: keep it cheap (a histogram update).
	ObserveBatch func(ops int, took time.Duration, committed bool)
}

func (o *Options) setDefaults() {
	if o.MaxPayloadBytes <= 0 {
		o.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if o.MaxPlanBlocks <= 0 {
		o.MaxPlanBlocks = DefaultMaxPlanBlocks
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
	if o.Clock == nil {
		if o.Now == nil {
			o.Clock = systemClock{origin: time.Now()}
		} else {
			o.Clock = funcClock{now: o.Now, origin: time.Now()}
		}
	}
	o.Now = o.Clock.Now
	if o.Retention == 0 {
		o.Retention = DefaultRetention
	}
	if o.DiskAdmission == 0 {
		o.DiskAdmission = DefaultDiskAdmission
	}
	if o.ReserveBytes == 0 {
		o.ReserveBytes = DefaultReserveBytes
	}
	if o.WALLimit <= 0 {
		o.WALLimit = DefaultWALLimit
	}
}

// check rejects options below their minimums.
func (o *Options) check() error {
	switch {
	case o.Retention < MinRetention:
		return fmt.Errorf("ledger: retention %s is below the minimum of %s", o.Retention, MinRetention)
	case o.ReserveBytes < MinReserveBytes:
		return fmt.Errorf("ledger: reserve of %d bytes is below the minimum of %d", o.ReserveBytes, MinReserveBytes)
	case o.DiskAdmission < 0:
		return fmt.Errorf("ledger: disk admission %d is negative", o.DiskAdmission)
	}
	return nil
}

// Store is an open ledger. It is safe for concurrent use. Close it exactly
// once; operations after Close return ErrClosed.
type Store struct {
	path   string
	opts   Options
	log    *zap.Logger
	db     *sql.DB    // pooled connections for reads and checkpoints
	reads  *readStmts // the read path's statements, prepared on db
	wconn  *sql.Conn  // the writer goroutine's connection
	wstmts *stmtCache // statements prepared on wconn, used by the writer only
	lock   *ownerLock
	secret []byte
	cache  *hotCache
	memo   *planMemo // see planmemo.go

	enabled atomic.Bool
	reqs    chan *request
	quit    chan struct{}
	done    chan struct{}

	mu     sync.RWMutex // held shared while submitting, exclusively by Close
	closed bool

	closeOnce sync.Once
	closeErr  error

	stats       storeStats
	life        lifecycle
	barrier     *barrier
	touched     touches
	ends        intentEnds // CreateIntent waits on it for delivering competitors
	reserve     reserve
	lastCleanup time.Duration // monotonic; maintenance goroutine only
	maintQuit   chan struct{}
	maintDone   chan struct{}
	walWanted   atomic.Bool // maintenance asks the writer to truncate the WAL
	ops         opsState    // snapshots Close waits for
}

// dsn returns the connection string: every pooled connection gets WAL,
// foreign keys, synchronous=FULL, no automatic checkpoint and a WAL that
// SQLite truncates to walLimit when it restarts it. Temporary storage is
// in memory: the writer runs each operation in a savepoint, whose
// statement journal would otherwise spill to a new temporary file (open,
// write, unlink) in nearly every commit that stores a payload. It holds
// only the pages one operation rewrites and is not part of durability.
func dsn(path string, busy time.Duration, walLimit int64) string {
	return path + "?" + strings.Join([]string{
		fmt.Sprintf("_pragma=busy_timeout(%d)", busy.Milliseconds()),
		"_pragma=journal_mode(WAL)",
		"_pragma=foreign_keys(1)",
		"_pragma=synchronous(FULL)",
		"_pragma=wal_autocheckpoint(0)",
		"_pragma=temp_store(2)",
		fmt.Sprintf("_pragma=journal_size_limit(%d)", walLimit),
		"_txlock=immediate",
	}, "&")
}

// Open opens (creating if needed, unless disabled) the ledger at path,
// takes exclusive ownership, migrates the schema, recovers what an earlier
// process left unresolved and applies the coverage-gap rules, all before
// it returns. See Options.Disabled.
func Open(path string, opts Options) (*Store, error) {
	opts.setDefaults()
	if err := opts.check(); err != nil {
		return nil, err
	}
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
	if err := checkNotBlocked(abs); err != nil {
		return nil, fmt.Errorf("ledger: open: %w", err)
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
	if err := checkGuardFile(abs, opts.BusyTimeout); err != nil {
		_ = lock.release()
		return nil, err
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
	db, err := sql.Open("sqlite", dsn(abs, opts.BusyTimeout, opts.WALLimit))
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
		reads:  newReadStmts(db),
		wconn:  wconn,
		wstmts: newStmtCache(wconn),
		lock:   lock,
		cache:  newHotCache(opts.HotCacheBytes, opts.HotCacheEntries),
		memo:   newPlanMemo(defaultMemoEntries, defaultMemoPlanBytes),
		reqs:   make(chan *request, opts.MaxBatch),
		quit:   make(chan struct{}),
		done:   make(chan struct{}),

		barrier:     newBarrier(opts.Clock),
		reserve:     reserve{path: abs + reserveSuffix, want: opts.ReserveBytes},
		lastCleanup: opts.Clock.Monotonic(),
		maintQuit:   make(chan struct{}),
		maintDone:   make(chan struct{}),
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
	s.life.lastWrite.Store(time.Now().UnixNano())
	s.sampleDisk()
	if !opts.Disabled {
		s.ensureReserve()
	}
	go s.writer()
	if opts.manualMaintenance {
		close(s.maintDone)
	} else {
		go s.maintenance()
	}
	s.log.Info("ledger opened",
		zap.String("path", abs),
		zap.Bool("enabled", !opts.Disabled),
		zap.Int("recovered_intents", rec.intents),
		zap.Int("poison_markers", rec.markers),
		zap.Bool("coverage_gap_consumed", rec.gapConsumed),
		zap.Int64("reserve_bytes", s.reserve.size()))
	return s, nil
}

// Path returns the cleaned absolute database path.
func (s *Store) Path() string { return s.path }

// Enabled reports whether the store accepts per-request writes: it is
// enabled and its guard has not latched.
func (s *Store) Enabled() bool { return s.enabled.Load() && !s.life.guarded.Load() }

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
		close(s.maintQuit)
		<-s.maintDone
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.ops.bg.Wait() // a running snapshot finishes first
		close(s.quit)
		<-s.done
		s.wstmts.close()
		s.reads.close()
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
// blocking writers (PASSIVE). Call it from a background loop, never on a
// request path: SQLite's automatic checkpoint is disabled because it
// stalls the committing request. The store's maintenance calls it every
// tick. It returns the WAL size and the number of frames checkpointed.
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
