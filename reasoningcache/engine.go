package reasoningcache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Engine plans replays, dispatches intents and records outputs for one
// ledger. It is safe for concurrent use; one Engine serves every request
// of the process.
type Engine struct {
	store  *ledger.Store
	cfg    Config
	secret []byte
	log    *zap.Logger

	counters *Counters

	// prep is the one shared preparation workspace (canonical scratch
	// and the payloads a plan loads while it is validated), which the
	// shared allowance reserves once: preparations take turns in it.
	prep chan struct{}

	splits itemSplits // replayed outputs split into items (itemsplit.go)

	mu       sync.Mutex
	capacity int64 // bytes sessions may hold: M minus the shared allowance
	used     int64 // bytes held by live sessions
	active   int   // live full-cache sessions
}

// New returns an Engine over an open store. It fails if the memory budget
// cannot hold the shared preparation allowance (hot cache min(4 MiB,
// M/32), canonical scratch and the replay ceiling) plus 64 KiB.
func New(store *ledger.Store, cfg Config) (*Engine, error) {
	if store == nil {
		return nil, errors.New("reasoningcache: new: nil store")
	}
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if limit := store.MaxPayloadBytes(); cfg.EntryAllowance > limit {
		return nil, fmt.Errorf("reasoningcache: entry_allowance %d is above the ledger's payload limit of %d bytes", cfg.EntryAllowance, limit)
	}
	return &Engine{
		store:    store,
		cfg:      cfg,
		secret:   store.Secret(),
		log:      cfg.Logger,
		capacity: cfg.MemoryBudget - cfg.SharedAllowance(),
		counters: cfg.Counters,
		prep:     make(chan struct{}, 1),
	}, nil
}

// Config returns the effective configuration (defaults applied).
func (e *Engine) Config() Config { return e.cfg }

// Stats is a snapshot of the engine's session accounting.
type Stats struct {
	Sessions  int   // live full-cache sessions
	BytesUsed int64 // bytes those sessions hold
	Capacity  int64 // bytes sessions may hold in total
}

// Stats returns the current session accounting.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Sessions: e.active, BytesUsed: e.used, Capacity: e.capacity}
}

// Sweep is the generation_timeout housekeeping for orphaned intents:
// every unresolved intent that no session of this process watches any
// more and whose persisted metadata was not renewed for IntentTimeout
// is poisoned at its positions and removed. Intents of live sessions are
// left to their own monotonic inactivity timers (Session.Progress), so
// neither a long healthy stream nor a wall-clock jump expires them. The
// app runs it periodically.
func (e *Engine) Sweep(ctx context.Context) error {
	before := e.cfg.Now().Add(-e.cfg.IntentTimeout)
	n, err := e.store.ExpireOrphanIntents(ctx, before, "generation_timeout", liveIDs(e.store))
	if err != nil {
		return fmt.Errorf("reasoningcache: sweep: %w", err)
	}
	if n > 0 {
		e.counters.poisoned("expired", int64(n))
		e.log.Debug("reasoning cache sweep", zap.String("reason", "generation_timeout"), zap.Int("intents", n))
	}
	return nil
}

// lease is the byte allowance one session holds. It is released exactly
// once, by the session's end or, for a session nobody ended, by a cleanup
// after the session became unreachable.
type lease struct {
	e        *Engine
	mu       sync.Mutex
	bytes    int64
	released atomic.Bool
}

// acquire reserves n bytes and one session slot, or returns nil.
func (e *Engine) acquire(n int64) *lease {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.active >= e.cfg.MaxConcurrent || n > e.capacity-e.used {
		return nil
	}
	e.active++
	e.used += n
	return &lease{e: e, bytes: n}
}

// grow adds n bytes to l if the budget allows.
func (l *lease) grow(n int64) bool {
	if n <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released.Load() {
		return false
	}
	e := l.e
	e.mu.Lock()
	defer e.mu.Unlock()
	if n > e.capacity-e.used {
		return false
	}
	e.used += n
	l.bytes += n
	return true
}

// release returns the lease's bytes and slot; later calls do nothing.
func (l *lease) release() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released.Swap(true) {
		return
	}
	e := l.e
	e.mu.Lock()
	e.active--
	e.used -= l.bytes
	e.mu.Unlock()
}
