package caddymodule

import (
	"fmt"
	"sync"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// The ledger pool: one open ledger per database path, shared by every
// configuration that names it and pinned by every request that uses it,
// so that a `caddy reload` neither reopens the ledger nor closes it under
// the requests still streaming. CacheApp.openStore takes a reference,
// CacheApp.Cleanup drops it, and acquire/release pin it per request.

// Timings of the pool; variables so that tests can shorten them.
var (
	// exitDrainTimeout bounds how long Caddy's shutdown waits for requests
	// still holding the store before closing it anyway.
	exitDrainTimeout = 10 * time.Second
	// reloadDrainLimit bounds how long a store dropped by a reload (its
	// database path changed or the app was removed) stays open for the
	// requests still holding it.
	reloadDrainLimit = 30 * time.Minute
	// reopenWait bounds how long opening a database waits for the same
	// database's previous store to finish closing.
	reopenWait = 10 * time.Second
)

// ledgers holds the open ledgers, keyed by cleaned absolute database path,
// across configuration reloads.
var ledgers = caddy.NewUsagePool()

// closing maps a database path to a channel that is closed when the store
// a reload dropped for that path has closed, so that a later open of the
// same path waits for it instead of failing on the ownership lock.
var (
	closingMu sync.Mutex
	closing   = map[string]chan struct{}{}
)

// testHookStoreClosed, when set by tests, is called once each time a
// store closes.
var testHookStoreClosed func(path string)

// storeHolder is the pool value: the open store and the requests pinning
// it.
type storeHolder struct {
	key   string
	store *ledger.Store
	log   *zap.Logger

	mu       sync.Mutex
	inflight int
	dropped  bool          // no configuration references it any more
	drained  chan struct{} // closed when dropped and inflight reaches 0
	closed   chan struct{} // closed once the store has closed
	once     sync.Once
	closeErr error
}

func openHolder(key string, opts ledger.Options) (*storeHolder, error) {
	closingMu.Lock()
	prev := closing[key]
	closingMu.Unlock()
	if prev != nil {
		select {
		case <-prev:
		case <-time.After(reopenWait):
			return nil, fmt.Errorf("database %s is still held by requests of an earlier configuration; retry when they have finished", key)
		}
	}
	log := caddy.Log().Named("reasoning_cache.ledger")
	opts.Logger = log
	opts.ObserveBatch = observeBatch
	st, err := ledger.Open(key, opts)
	if err != nil {
		return nil, err
	}
	return &storeHolder{key: key, store: st, log: log, drained: make(chan struct{}), closed: make(chan struct{})}, nil
}

func (h *storeHolder) acquire() (*ledger.Store, func(), error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped && h.inflight == 0 {
		return nil, func() {}, ledger.ErrClosed
	}
	if !h.store.Enabled() {
		return nil, func() {}, ErrCacheDisabled
	}
	h.inflight++
	var once sync.Once
	return h.store, func() { once.Do(h.release) }, nil
}

func (h *storeHolder) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inflight--
	if h.dropped && h.inflight == 0 {
		close(h.drained)
	}
}

// Destruct is called by the pool when no configuration references the
// store any more. If no request holds it, it closes now. Otherwise it
// closes when the last request releases it: in the background during a
// reload (so that the reload does not wait for long streams; at most
// reloadDrainLimit), or, when Caddy is exiting, after at most
// exitDrainTimeout.
func (h *storeHolder) Destruct() error {
	h.mu.Lock()
	h.dropped = true
	idle := h.inflight == 0
	if idle {
		close(h.drained)
	}
	h.mu.Unlock()
	if idle {
		return h.close()
	}
	closingMu.Lock()
	closing[h.key] = h.closed
	closingMu.Unlock()
	if caddy.Exiting() {
		h.waitDrained(exitDrainTimeout)
		return h.close()
	}
	go func() {
		h.waitDrained(reloadDrainLimit)
		if err := h.close(); err != nil {
			h.log.Error("closing reasoning cache database", zap.Error(err))
		}
	}()
	return nil
}

func (h *storeHolder) waitDrained(limit time.Duration) {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-h.drained:
	case <-t.C:
		h.log.Warn("closing reasoning cache database under requests still using it",
			zap.String("database", h.key), zap.Duration("waited", limit))
	}
}

func (h *storeHolder) close() error {
	h.once.Do(func() {
		h.closeErr = h.store.Close()
		closingMu.Lock()
		if closing[h.key] == h.closed {
			delete(closing, h.key)
		}
		closingMu.Unlock()
		close(h.closed)
		if hook := testHookStoreClosed; hook != nil {
			hook(h.key)
		}
	})
	return h.closeErr
}

// Interface guards
var _ caddy.Destructor = (*storeHolder)(nil)
