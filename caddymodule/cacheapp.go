package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func init() {
	caddy.RegisterModule(CacheApp{})
}

// DefaultCacheDatabase is the ledger path used when none is configured,
// relative to Caddy's working directory.
const DefaultCacheDatabase = "./data/reasoning-cache.sqlite"

// ErrCacheDisabled is the reason a request is relayed without the cache
// when the cache is disabled or has no database.
var ErrCacheDisabled = errors.New("reasoning cache is disabled")

// Timings of the app; variables so that tests can shorten them (the
// ledger pool's are in ledgerpool.go).
var (
	// sweepInterval is how often the app expires abandoned intents
	// (intent_timeout).
	sweepInterval = 30 * time.Second
	// startWait bounds how long a request that arrives before the app has
	// started (Caddy starts apps in no fixed order) waits for the ledger
	// before it is relayed without the cache.
	startWait = 5 * time.Second
)

// CacheApp is the reasoning_cache app: it owns the reasoning cache's
// ledger, a crash-safe SQLite database that one Caddy process owns at a
// time. The open ledger is shared across configuration reloads: a `caddy
// reload` hands it to the new configuration instead of reopening it, and
// requests still streaming under the old configuration keep it open until
// they end. The ledger is opened when the app starts, never while it is
// provisioned, so `caddy validate` has no effect on it.
//
// Handlers reach it with ctx.App("reasoning_cache") and pin the ledger
// for each request with acquireEngine.
type CacheApp struct {
	// Database is the path of the ledger's SQLite database. A relative path
	// is resolved against Caddy's working directory. The folder is created
	// with mode 0700 if missing; the database and its -wal, -shm and -lock
	// files are 0600. Default: ./data/reasoning-cache.sqlite.
	Database string `json:"database,omitempty"`

	// Enabled turns the cache on. When false and the database does not
	// exist, nothing is created and requests are relayed without the cache.
	// When false and the database exists, Caddy still takes ownership of
	// it when the app starts, recovers what an earlier process left
	// unfinished and records a coverage gap; the next time the cache is
	// enabled, everything cached before the gap stops being replayed
	// (payloads are kept). Default: false.
	Enabled bool `json:"enabled,omitempty"`

	// MemoryBudget bounds the memory the cache may use for preparing,
	// replaying and capturing requests, in bytes. A configuration whose
	// budget cannot hold the shared preparation allowance (hot cache,
	// canonicalization scratch and replay ceiling) plus 64 KiB fails at
	// startup. Default: 128 MiB.
	MemoryBudget int64 `json:"memory_budget,omitempty"`

	// MaxConcurrent is how many requests may use the full cache (replay
	// and capture) at once; the others are relayed without it. Default: 10.
	MaxConcurrent int `json:"max_concurrent,omitempty"`

	// EntryAllowance is the per-request allowance for one captured output
	// block, in bytes. Default: 4 MiB.
	EntryAllowance int64 `json:"entry_allowance,omitempty"`

	// ReplayCeiling bounds the original output replayed into one request,
	// in bytes. Default: 16 MiB.
	ReplayCeiling int64 `json:"replay_ceiling,omitempty"`

	// MaxPlanBlocks bounds how many earlier turns one request may replay,
	// each as its original output block. Default: 256.
	MaxPlanBlocks int `json:"max_plan_blocks,omitempty"`

	// IntentTimeout is how long a dispatched request's upstream answer may
	// stay inactive (no event, no body bytes) before the cache gives up on
	// it and refuses to replay anything from its position. Default: 15m.
	IntentTimeout caddy.Duration `json:"intent_timeout,omitempty"`

	// MaxPlanRecords is the former name of max_plan_blocks, still
	// accepted; setting both to different values is an error.
	//
	// Deprecated: use max_plan_blocks.
	MaxPlanRecords int `json:"max_plan_records,omitempty"`

	// GenerationTimeout is the former name of intent_timeout, still
	// accepted; setting both to different values is an error.
	//
	// Deprecated: use intent_timeout.
	GenerationTimeout caddy.Duration `json:"generation_timeout,omitempty"`

	// ReplayRetry resends a request once without replayed reasoning when
	// the upstream rejects it (400 invalid_encrypted_content or 404 item
	// not found) before anything reached the client, after recording a
	// conflict for exactly the replayed turns. Default: true.
	ReplayRetry *bool `json:"replay_retry,omitempty"`

	// Retention is how long a cached turn's original output must go
	// unused before the hourly cleanup may delete it. Every start (and
	// every detected wall-clock step) also begins a 30-day window during
	// which nothing is deleted. Default and minimum: 30 days (720h).
	Retention caddy.Duration `json:"retention,omitempty"`

	// DiskAdmission is the size, in bytes, of the database plus its WAL
	// above which no new original outputs are stored (turns are still
	// observed, and earlier turns still replayed). New outputs also stop
	// while the filesystem has less free space than the reserve. Default:
	// 1 GiB.
	DiskAdmission int64 `json:"disk_admission,omitempty"`

	// Reserve is the size, in bytes, of a file physically allocated beside
	// the database (<database>.reserve). When the disk is full, it is
	// released so that the write that keeps the cache safe can be retried
	// once; it is allocated again when space returns. Default: 64 MiB;
	// minimum 64 KiB.
	Reserve int64 `json:"reserve,omitempty"`

	// SnapshotDir is the private directory (0700) where POST
	// /reasoning_cache/snapshot on the admin API publishes inspection
	// snapshots. A leading ~ is the home directory of the user Caddy runs
	// as. Default: ~/.reasoning-relay-inspection.
	SnapshotDir string `json:"snapshot_dir,omitempty"`

	// SnapshotFreeMargin is the free space, in bytes, that must remain on
	// the snapshot directory's file system after a snapshot. Default:
	// 64 MiB.
	SnapshotFreeMargin int64 `json:"snapshot_free_margin,omitempty"`

	// SnapshotMaxSource is the largest database, in bytes, a snapshot
	// copies. Default: 256 MiB.
	SnapshotMaxSource int64 `json:"snapshot_max_source,omitempty"`

	ctx    caddy.Context
	logger *zap.Logger
	key    string                 // cleaned absolute database path; the pool key
	ready  chan struct{}          // closed when Start has finished; holder and engine are read only after it
	holder *storeHolder           // nil when disabled without a database; set only in Start
	engine *reasoningcache.Engine // nil unless enabled
	unref  *sync.Once             // drops this configuration's pool reference once
	// stopping is set by Stop: the configuration is draining (Healthy).
	stopping *atomic.Bool
}

// CaddyModule returns the Caddy module information.
func (CacheApp) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{
		ID:  "reasoning_cache",
		New: func() caddy.Module { return new(CacheApp) },
	}
}

// Provision checks the configuration. It opens nothing: `caddy validate`
// provisions without starting, and must neither create, lock, recover nor
// gap-mark the ledger (nor fail because the running Caddy owns it).
func (a *CacheApp) Provision(ctx caddy.Context) error {
	a.ctx = ctx
	a.logger = ctx.Logger()
	a.stopping = new(atomic.Bool)
	if err := registerMetrics(ctx.GetMetricsRegistry()); err != nil {
		return fmt.Errorf("registering metrics: %w", err)
	}
	a.ready = make(chan struct{})
	if a.Database == "" {
		a.Database = DefaultCacheDatabase
	}
	if err := a.validateStorage(); err != nil {
		return err
	}
	abs, err := filepath.Abs(a.Database)
	if err != nil {
		return fmt.Errorf("database path %q: %w", a.Database, err)
	}
	a.key = filepath.Clean(abs)
	if err := a.resolveFormerNames(); err != nil {
		return err
	}
	if err := a.engineConfig().Check(); err != nil {
		return err
	}
	return nil
}

// Start opens the ledger (openStore), applies this configuration's enabled
// setting to it (disabling records a coverage gap; enabling consumes it)
// and, with the cache enabled, starts the sweep of orphaned intents.
func (a *CacheApp) Start() error {
	defer close(a.ready)
	if err := a.openStore(); err != nil {
		return err
	}
	setActive(a)
	if a.holder == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(a.ctx, 30*time.Second)
	defer cancel()
	if err := a.holder.store.SetEnabled(ctx, a.Enabled); err != nil {
		return fmt.Errorf("set enabled=%v on %s: %w", a.Enabled, a.key, err)
	}
	if a.engine != nil {
		go a.sweepLoop()
	}
	return nil
}

// openStore opens the ledger, or takes over the one an earlier
// configuration opened for the same path (a reload: the pool still holds
// it, so it is not reopened), and builds this configuration's engine over
// it. It is the one place where the app opens its store. Disabled without
// a database it opens nothing and leaves holder nil.
func (a *CacheApp) openStore() error {
	cfg := a.engineConfig()
	opts := a.ledgerOptions(reasoningcache.HotCacheBytes(cfg.MemoryBudget))
	val, loaded, err := ledgers.LoadOrNew(a.key, func() (caddy.Destructor, error) {
		return openHolder(a.key, opts)
	})
	if errors.Is(err, ledger.ErrNoDatabase) {
		a.logger.Info("reasoning cache disabled; no database", zap.String("database", a.key))
		return nil
	}
	if errors.Is(err, ledger.ErrGuarded) {
		// A full disk latched the guard in an earlier run: relay without
		// the cache until an operator deletes the guard file.
		a.logger.Error("reasoning cache off", zap.Error(err))
		return nil
	}
	if err != nil {
		return err
	}
	a.holder = val.(*storeHolder)
	a.unref = new(sync.Once)
	if a.Enabled {
		// one engine per configuration over the shared ledger: its
		// settings can change on reload; requests of the old
		// configuration finish on the old engine
		a.engine, err = reasoningcache.New(a.holder.store, cfg)
		if err != nil {
			return err
		}
	}
	a.logger.Info("reasoning cache database",
		zap.String("database", a.key), zap.Bool("enabled", a.Enabled), zap.Bool("reused", loaded))
	return nil
}

// started waits (at most startWait) until Start has finished and reports
// whether it has; holder and engine may be read only when it has.
func (a *CacheApp) started() bool {
	if a.ready == nil {
		return false
	}
	select {
	case <-a.ready:
		return true
	default:
	}
	t := time.NewTimer(startWait)
	defer t.Stop()
	select {
	case <-a.ready:
		return true
	case <-t.C:
		return false
	}
}

// Stop marks this configuration as draining, so that its health route
// answers 503, and closes nothing: the ledger must outlive this
// configuration while its requests finish. Cleanup releases it.
func (a *CacheApp) Stop() error {
	a.stopping.Store(true)
	return nil
}

// Cleanup releases this configuration's reference to the ledger. The
// ledger closes once no configuration and no request uses it.
func (a *CacheApp) Cleanup() error {
	dropActive(a)
	if a.holder == nil {
		return nil
	}
	a.unref.Do(func() {
		deleted, err := ledgers.Delete(a.key)
		if err != nil {
			a.logger.Error("closing reasoning cache database", zap.String("database", a.key), zap.Error(err))
		}
		if deleted {
			a.logger.Debug("unloading unused reasoning cache database", zap.String("database", a.key))
		}
	})
	return nil
}

// acquire pins the ledger for one request and returns it with the
// function that releases the pin (call it exactly once, when the request
// has finished with the ledger, typically deferred; further calls do
// nothing). While any pin is held the ledger stays open, even if a
// `caddy reload` has cleaned this configuration up meanwhile.
//
// It returns ErrCacheDisabled when the cache is disabled or has no
// database, and ledger.ErrClosed if the ledger has already been closed;
// in both cases the request should be relayed without the cache.
func (a *CacheApp) acquire() (*ledger.Store, func(), error) {
	if !a.Enabled || !a.started() || a.holder == nil {
		return nil, func() {}, ErrCacheDisabled
	}
	return a.holder.acquire()
}

// acquireEngine pins the ledger for one request and returns the cache
// engine, or ErrCacheDisabled. Call release when the request ends.
func (a *CacheApp) acquireEngine() (*reasoningcache.Engine, func(), error) {
	if !a.Enabled || !a.started() || a.engine == nil {
		return nil, func() {}, ErrCacheDisabled
	}
	_, release, err := a.holder.acquire()
	if err != nil {
		return nil, release, err
	}
	return a.engine, release, nil
}

// DatabasePath returns the cleaned absolute path of the ledger database.
func (a *CacheApp) DatabasePath() string { return a.key }

// sweepLoop expires, off the request path, the intents of generations
// that no live session watches any more (generation_timeout). The WAL,
// retention and the disk reserve are the store's own maintenance.
func (a *CacheApp) sweepLoop() {
	defer func() {
		if err := recover(); err != nil {
			a.logger.Error("reasoning cache sweep loop panicked", zap.Any("error", err), zap.ByteString("stack", debug.Stack()))
		}
	}()
	ticker := time.NewTicker(sweepInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ticker.C:
			if err := a.engine.Sweep(a.ctx); err != nil && a.ctx.Err() == nil {
				a.logger.Warn("reasoning cache sweep failed", zap.Error(err))
			}
		case <-a.ctx.Done():
			return
		}
	}
}

// engineConfig turns the app's fields into the engine's configuration.
// Defaults and range checks are the engine's (reasoningcache.New).
func (a *CacheApp) engineConfig() reasoningcache.Config {
	return reasoningcache.Config{
		MemoryBudget:   a.MemoryBudget,
		MaxConcurrent:  a.MaxConcurrent,
		EntryAllowance: a.EntryAllowance,
		ReplayCeiling:  a.ReplayCeiling,
		MaxPlanBlocks:  a.MaxPlanBlocks,
		IntentTimeout:  time.Duration(a.IntentTimeout),
		Logger:         a.logger.Named("engine"),
		Counters:       engineCounters,
	}
}

// replayRetry reports whether a request whose replayed reasoning the
// upstream rejected is resent once without replay.
func (a *CacheApp) replayRetry() bool { return a.ReplayRetry == nil || *a.ReplayRetry }

// Interface guards
var (
	_ caddy.App          = (*CacheApp)(nil)
	_ caddy.Provisioner  = (*CacheApp)(nil)
	_ caddy.CleanerUpper = (*CacheApp)(nil)
)
