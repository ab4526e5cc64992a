package reasoningcache

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// persistEvery is the most often a session's persisted intent deadline is
// renewed: min(5 s, timeout/4).
func persistEvery(timeout time.Duration) time.Duration { return min(5*time.Second, timeout/4) }

// liveKey names one intent of one store.
type liveKey struct {
	store *ledger.Store
	id    int64
}

// liveIntents holds every intent a session of this process still watches,
// across engines (a reload's old and new engine share the store), so that
// Sweep leaves them to their monotonic timers.
var liveIntents sync.Map // liveKey -> struct{}

// watch enforces the generation inactivity timeout of one session with a
// monotonic timer renewed by upstream progress. It references no Session,
// so a session dropped without being ended can still be collected. The
// timer callback carries the revision it was armed with: a callback from
// an earlier arming (a stale one) is ignored.
type watch struct {
	store   *ledger.Store
	timeout time.Duration
	now     func() time.Time // wall clock for the persisted metadata
	log     *zap.Logger

	mu         sync.Mutex
	intent     int64
	rev        uint64
	last       time.Time // monotonic: last progress
	persisted  time.Time // monotonic: last persisted deadline
	persisting bool
	timer      *time.Timer
}

// begin starts watching intent id (a new dispatch, or the one that
// replaces an earlier intent of the session).
func (w *watch) begin(id int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.unregister()
	w.intent = id
	w.last, w.persisted = time.Now(), time.Now()
	liveIntents.Store(liveKey{w.store, id}, struct{}{})
	w.arm(w.timeout)
}

// arm (re)starts the timer for d under a new revision. w.mu is held.
func (w *watch) arm(d time.Duration) {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.rev++
	rev := w.rev
	w.timer = time.AfterFunc(d, func() { w.fire(rev) })
}

// progress records upstream progress: it renews the deadline and, at most
// once per persistEvery, the persisted deadline metadata (off the caller's
// path).
func (w *watch) progress() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.intent == 0 {
		return
	}
	now := time.Now()
	w.last = now
	if w.persisting || now.Sub(w.persisted) < persistEvery(w.timeout) {
		return
	}
	w.persisting, w.persisted = true, now
	id, deadline := w.intent, w.now().Add(w.timeout)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
		defer cancel()
		if err := w.store.TouchIntent(ctx, id, deadline); err != nil && !ledger.IsReason(err, ledger.ReasonIntentMissing) {
			w.log.Debug("reasoning cache", zap.String("reason", "deadline_update_failed"), zap.Error(err))
		}
		w.mu.Lock()
		w.persisting = false
		w.mu.Unlock()
	}()
}

// fire is the timer callback armed under revision rev.
func (w *watch) fire(rev uint64) {
	w.mu.Lock()
	if rev != w.rev || w.intent == 0 {
		w.mu.Unlock() // stale, or the session ended
		return
	}
	if idle := time.Since(w.last); idle < w.timeout {
		w.arm(w.timeout - idle) // progress since arming: not due yet
		w.mu.Unlock()
		return
	}
	id := w.intent
	w.unregister()
	w.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), w.timeout)
	defer cancel()
	err := w.store.PoisonIntent(ctx, id, "generation_timeout")
	switch {
	case err == nil:
		w.log.Debug("reasoning cache", zap.String("reason", "position_poisoned"), zap.String("cause", "generation_timeout"))
	case !ledger.IsReason(err, ledger.ReasonIntentMissing):
		// left for Sweep, which now sees it as an orphan
		w.log.Debug("reasoning cache", zap.String("reason", "resolve_failed"), zap.Error(err))
	}
}

// stop ends the watch and reports whether the intent was still the
// session's (false: the timer expired it).
func (w *watch) stop() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := w.intent != 0
	w.unregister()
	return had
}

// unregister forgets the current intent. w.mu is held.
func (w *watch) unregister() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.rev++
	if w.intent != 0 {
		liveIntents.Delete(liveKey{w.store, w.intent})
		w.intent = 0
	}
}

// liveIDs lists the intents of store that sessions still watch.
func liveIDs(store *ledger.Store) []int64 {
	var ids []int64
	liveIntents.Range(func(k, _ any) bool {
		if lk := k.(liveKey); lk.store == store {
			ids = append(ids, lk.id)
		}
		return true
	})
	return ids
}
