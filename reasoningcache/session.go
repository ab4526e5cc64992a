package reasoningcache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Session is one request's use of the cache, from Prepare to exactly one
// of Delivered, Abandon or Release; the first of those ends it and later
// calls (of any of the three) do nothing. A Session is not meant for use
// from several goroutines at once, but its methods are serialized, so
// doing so is safe.
//
// A session holds part of the memory budget until it ends. A session that
// is dropped without being ended cannot leak that memory: a cleanup
// registered with the runtime returns it once the Session is unreachable.
// Its intent, if any, then stays unresolved in the ledger until Sweep (or
// the next startup) poisons and removes it, which is the safe outcome for
// a request whose fate is unknown.
type Session struct {
	e     *Engine
	log   *zap.Logger
	scope ledger.Scope
	shape canonical.Shape
	d     *canonical.Digests

	plain    []json.RawMessage // the translated input as the handler gave it
	input    []json.RawMessage // what to send upstream
	key      string
	replayed int
	skip     string

	gen      int64
	start    string
	position int64
	plan     []ledger.PlanBlock

	watch *watch    // generation inactivity timer of the intent
	rec   recording // the charge of the recorded output

	mu        sync.Mutex
	intent    int64 // 0: nothing to resolve (pass-through, or already ended in the ledger)
	completed bool  // Complete ran
	// unrecorded is the reason code Complete could not commit: the
	// outcome is not durably recorded, so the session must not end with a
	// clean resolve (finish poisons instead, or leaves the intent).
	unrecorded string
	ended      bool
	answered   bool // Answered ran: the input is no longer held
	lease      *lease
}

// forgotten is what the cleanup of a session nobody ended needs.
type forgotten struct {
	l *lease
	w *watch
}

// newSession registers the lease cleanup.
func newSession(e *Engine, l *lease, log *zap.Logger) *Session {
	s := &Session{e: e, lease: l, log: log,
		watch: &watch{store: e.store, timeout: e.cfg.IntentTimeout, now: e.cfg.Now, log: log}}
	if l != nil {
		// a forgotten session frees its memory, and its intent becomes an
		// orphan for Sweep
		runtime.AddCleanup(s, func(c forgotten) { c.l.release(); c.w.stop() }, forgotten{l, s.watch})
	}
	return s
}

// Input returns the input to send upstream: the translated input with the
// planned blocks replaced, or the original when nothing is replayed.
func (s *Session) Input() []json.RawMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.input
}

// PromptCacheKey returns the derived prompt_cache_key, or "" unless the
// request asked for one (and its history could be identified).
func (s *Session) PromptCacheKey() string { return s.key }

// Replayed returns how many assistant blocks Input replays.
func (s *Session) Replayed() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.replayed
}

// Skip returns "" when the request runs with the full cache (planned,
// dispatched and recorded), or the fixed reason code why caching is off
// for it: a canonical refusal ("refused_" + reason), "capacity",
// "disabled", "invalid_spans", "dispatch_failed", ... A request at a
// poisoned position is not skipped: it replays its valid plan and is
// observed, and only its own output stays unreplayable there.
func (s *Session) Skip() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.skip
}

// Dispatched reports whether the session holds a ledger intent: the
// output of this request will be observed.
func (s *Session) Dispatched() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.intent != 0
}

// Answered tells the session that the upstream accepted the request
// (answered 2xx): the input it kept for a resend without replay is no
// longer needed, and the session stops holding it, so that a large
// history can be collected while the answer is relayed. DropReplay must
// not be called after it.
func (s *Session) Answered() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answered = true
	s.plain, s.input = nil, nil
}

// DropReplay is for an upstream that rejected the replayed reasoning (400
// invalid_encrypted_content or 404 item not found) before any byte reached
// the client: it writes end-conflict markers for exactly the replayed
// records, resolves the intent and dispatches a fresh one without replay,
// and returns the plain input to resend. With nothing replayed it returns
// the current input and changes nothing. An error means the resend would
// not be recorded safely: the handler should answer with an error instead
// (errors.Is(err, ErrUnavailable)).
func (s *Session) DropReplay(ctx context.Context) ([]json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.answered {
		return nil, errors.New("reasoningcache: drop replay: the upstream already answered")
	}
	if s.ended || s.completed || s.replayed == 0 || s.intent == 0 {
		return s.input, nil
	}
	e := s.e
	markers := make([]ledger.Marker, len(s.plan))
	for i, st := range s.plan {
		markers[i] = ledger.Marker{Kind: ledger.MarkerEndConflict, Digest: st.EndDigest, Reason: "upstream_rejected_replay", IntentID: s.intent}
	}
	if _, err := e.store.WriteMarkers(ctx, s.scope, markers); err != nil {
		return nil, fmt.Errorf("%w: drop replay: %w", ErrUnavailable, err)
	}
	e.counters.conflicts.Add(int64(len(markers)))
	if err := e.store.ResolveIntent(ctx, s.intent); err != nil && !ledger.IsReason(err, ledger.ReasonIntentMissing) {
		return nil, fmt.Errorf("%w: drop replay: %w", ErrUnavailable, err)
	}
	s.intent = 0
	s.input, s.replayed, s.plan = s.plain, 0, nil
	id, err := e.store.CreateIntent(ctx, s.intentRequest(0, nil))
	if err != nil {
		if err := s.dispatchFailed(ctx, err); err != nil {
			return nil, fmt.Errorf("drop replay: %w", err)
		}
		return s.input, nil
	}
	s.dispatched(id)
	s.log.Debug("reasoning cache", zap.String("reason", "replay_dropped"), zap.Int("blocks", len(markers)))
	e.counters.replayResends.Add(1)
	return s.input, nil
}

// Progress tells the session that the upstream generation made progress
// (an event or body bytes arrived): it renews the generation inactivity
// deadline, a monotonic timer, and at most once per min(5 s, timeout/4)
// the intent's persisted deadline metadata. Without progress for
// IntentTimeout, the intent is poisoned and removed. It is cheap and
// safe to call often and from any goroutine.
func (s *Session) Progress() { s.watch.progress() }

// Delivered ends the session after the response was delivered to the
// client. The intent is resolved only when Complete durably recorded the
// outcome; otherwise (Complete failed to commit, or was never called) the
// position is poisoned instead, and if even that fails the intent stays
// unresolved so that Sweep or the next startup poisons it. A delivered
// answer whose outcome the ledger does not know never leaves its position
// clean.
func (s *Session) Delivered(ctx context.Context) {
	s.finish(ctx, "", true)
}

// DeliveredQueued is Delivered that does not wait for the ledger's
// commit: when it returns the session has ended and its resolve (or
// poison) is queued in the ledger's writer ahead of every later write, so
// a later request at the same position finds the intent ended. The writer
// commits it with the next write, or alone after at most
// ledger.QueuedCommitDelay. wait blocks until the commit is done; a crash
// before it leaves the intent for startup to poison, as for any request
// whose end was not recorded.
func (s *Session) DeliveredQueued(ctx context.Context) (wait func()) {
	return s.end(ctx, "", true, true)
}

// Abandon ends the session for an unknown or interrupted outcome (the
// client went away, the stream broke, Complete was never reached): a
// start-poison marker covers the request's start position (and its end
// once it reached delivery) and the intent is removed. why is a short
// reason code ([a-z0-9_], at most 64 bytes; anything else is recorded as
// "abandoned").
func (s *Session) Abandon(ctx context.Context, why string) {
	if !reasonCode(why) {
		why = "abandoned"
	}
	s.finish(ctx, why, false)
}

// Release ends the session after a known failure without output (an
// upstream HTTP error before any stream): the intent is resolved without a
// marker, unless Complete ran and could not record its outcome (then the
// position is poisoned as for Delivered).
func (s *Session) Release(ctx context.Context) {
	s.finish(ctx, "", false)
}

func (s *Session) finish(ctx context.Context, poison string, delivered bool) {
	s.end(ctx, poison, delivered, false)()
}

// end ends the session and returns the function that commits its end and
// waits for the commit. queued puts the commit in the ledger writer's
// queue before end returns, as a queued write (ResolveIntentQueued), for
// callers that do not wait for it on the request's path; otherwise the
// returned function submits it. The session's memory is returned before
// it: the commit needs nothing the session holds.
func (s *Session) end(ctx context.Context, poison string, delivered, queued bool) (wait func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return func() {}
	}
	s.ended = true
	defer s.lease.release()
	if !s.watch.stop() {
		// the inactivity timer poisoned it (or left it to the sweep)
		s.intent = 0
	}
	if s.intent == 0 {
		return func() {}
	}
	switch {
	case poison != "":
	case s.unrecorded != "":
		poison = s.unrecorded
	case delivered && !s.completed:
		// delivered without an outcome the ledger knows
		poison = "not_recorded"
	}
	id := s.intent
	s.intent = 0
	store := s.e.store
	var commit func() error
	switch {
	case queued && poison != "":
		commit = store.PoisonIntentQueued(ctx, id, poison)
	case queued:
		commit = store.ResolveIntentQueued(ctx, id)
	case poison != "":
		commit = func() error { return store.PoisonIntent(ctx, id, poison) }
	default:
		commit = func() error { return store.ResolveIntent(ctx, id) }
	}
	e, log := s.e, s.log
	return func() {
		err := commit()
		if err == nil && poison != "" {
			e.counters.poisoned("interrupted", 1)
		}
		switch {
		case err != nil && !ledger.IsReason(err, ledger.ReasonIntentMissing):
			// The intent stays unresolved; Sweep or the next startup poisons it.
			log.Debug("reasoning cache", zap.String("reason", "resolve_failed"), zap.Error(err))
		case poison != "":
			log.Debug("reasoning cache", zap.String("reason", "position_poisoned"), zap.String("cause", poison))
		}
	}
}

// reasonCode reports whether c is a loggable fixed code.
func reasonCode(c string) bool {
	if c == "" || len(c) > 64 {
		return false
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= '0' && b <= '9' || b == '_') {
			return false
		}
	}
	return true
}
