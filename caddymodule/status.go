package caddymodule

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// activeApp is the reasoning_cache app of the running configuration, for
// the admin API and the metrics collector: the most recently started app
// that has not been cleaned up. Apps are kept in start order, so that when
// a new configuration fails after its app started (and is cleaned up), the
// previous configuration's app, still running, is the active one again.
var (
	activeApp  atomic.Pointer[CacheApp]
	activeMu   sync.Mutex
	activeApps []*CacheApp
)

// setActive records a started app as the active one.
func setActive(a *CacheApp) {
	activeMu.Lock()
	defer activeMu.Unlock()
	activeApps = append(activeApps, a)
	activeApp.Store(a)
}

// dropActive forgets a cleaned-up app.
func dropActive(a *CacheApp) {
	activeMu.Lock()
	defer activeMu.Unlock()
	activeApps = slices.DeleteFunc(activeApps, func(x *CacheApp) bool { return x == a })
	if n := len(activeApps); n > 0 {
		activeApp.Store(activeApps[n-1])
	} else {
		activeApp.Store(nil)
	}
}

// aggregatesTTL is how long the ledger aggregates of a status reply are
// reused before the ledger is read again.
const aggregatesTTL = 5 * time.Second

// Status is the reply of GET /reasoning_cache/status. Its JSON names are an
// interface: scripts and `caddy reasoning-relay status --json` read them.
// Counters count since the process started (they survive reloads).
type Status struct {
	// StartedAt is when the process loaded the relay (RFC 3339).
	StartedAt string `json:"started_at"`
	// UptimeSeconds is how long ago that was.
	UptimeSeconds int64 `json:"uptime_seconds"`
	// Database is the ledger's absolute path ("" when no app runs).
	Database string `json:"database"`
	// Enabled reports whether the cache replays and captures.
	Enabled bool `json:"enabled"`
	// Open reports whether the ledger is open (false when the cache is
	// disabled and no database exists).
	Open bool `json:"open"`
	// Requests counts finished requests by route and outcome.
	Requests map[string]map[string]int64 `json:"requests"`
	// Cache is what the reasoning cache engine decided.
	Cache reasoningcache.CounterValues `json:"cache"`
	// Sessions is the engine's memory accounting now.
	Sessions SessionStatus `json:"sessions"`
	// Admission is what the handlers hold and queue before preparing
	// requests, across every handler.
	Admission AdmissionStatus `json:"admission"`
	// Usage is the upstream token usage of answered chat requests, apart
	// for requests that carried replayed reasoning and those that did not.
	Usage UsageSplit `json:"usage"`
	// Ledger holds the ledger's aggregates (null when it is not open).
	Ledger *LedgerStatus `json:"ledger"`
	// Writer is the ledger writer's group-commit counters.
	Writer *ledger.Stats `json:"writer"`
	// Retention is the retention, cleanup, disk-reserve and guard state
	// (null when the ledger is not open).
	Retention *RetentionStatus `json:"retention"`
	// BodyLogDrops is how many body-capture writes were dropped.
	BodyLogDrops int64 `json:"capture_drops"`
	// Snapshots is the inspection snapshot state.
	Snapshots SnapshotStatus `json:"snapshots"`
}

// SessionStatus is the engine's memory accounting.
type SessionStatus struct {
	// Active is how many requests hold a full-cache session.
	Active int `json:"active"`
	// BytesInUse is the memory budget they hold, in bytes.
	BytesInUse int64 `json:"bytes_in_use"`
	// CapacityBytes is what sessions may hold in total.
	CapacityBytes int64 `json:"capacity_bytes"`
}

// AdmissionStatus is the handlers' admission state now: requests queued
// for a preparation slot and client body bytes held.
type AdmissionStatus struct {
	// PrepWaiting is how many requests wait for a preparation slot, their
	// bodies not yet read.
	PrepWaiting int64 `json:"prep_waiting"`
	// BodyBytes is how many client body bytes are counted against
	// max_request_bytes_in_flight.
	BodyBytes int64 `json:"body_bytes"`
}

// UsageSplit is token usage with and without replayed reasoning.
type UsageSplit struct {
	// WithReplay counts answers to requests that carried replayed blocks.
	WithReplay TokenUsage `json:"with_replay"`
	// WithoutReplay counts all other answered chat requests.
	WithoutReplay TokenUsage `json:"without_replay"`
}

// TokenUsage sums the upstream usage of answers.
type TokenUsage struct {
	// Responses is how many answers were summed.
	Responses int64 `json:"responses"`
	// InputTokens is usage.input_tokens.
	InputTokens int64 `json:"input_tokens"`
	// CachedInputTokens is usage.input_tokens_details.cached_tokens: the
	// upstream's prompt-cache hits.
	CachedInputTokens int64 `json:"cached_input_tokens"`
	// OutputTokens is usage.output_tokens.
	OutputTokens int64 `json:"output_tokens"`
	// ReasoningTokens is usage.output_tokens_details.reasoning_tokens.
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// LedgerStatus is the ledger's aggregates with their age.
type LedgerStatus struct {
	ledger.Aggregates
	// AgeMillis is how old the aggregates are (they are reused for 5 s).
	AgeMillis int64 `json:"age_ms"`
	// Error is set when they could not be read ("" otherwise).
	Error string `json:"error,omitempty"`
}

// RetentionStatus is the ledger's storage life cycle: retention and
// cleanup, the disk reserve, payload admission and the guard. It comes
// from the ledger's last maintenance samples; reading it touches nothing
// and advances no clock.
type RetentionStatus struct {
	// GuardLatched is true when a safety write failed even with the
	// reserve released: the relay serves without its cache until an
	// operator deletes GuardPath and restarts it.
	GuardLatched bool `json:"guard_latched"`
	// GuardPath is the guard file (it exists only when latched).
	GuardPath string `json:"guard_path"`
	// GuardCause is the error that latched the guard ("" when not).
	GuardCause string `json:"guard_cause,omitempty"`
	// ReserveBytes is what the physically allocated reserve holds now;
	// ReserveWantedBytes is its configured size (less while released).
	ReserveBytes       int64 `json:"reserve_bytes"`
	ReserveWantedBytes int64 `json:"reserve_wanted_bytes"`
	// ReserveError is the last failure to allocate the reserve, if any.
	ReserveError string `json:"reserve_error,omitempty"`
	// Admitting is false while disk pressure (disk_admission, or less
	// free space than the reserve) keeps new outputs from being stored.
	Admitting bool `json:"admitting"`
	// DiskAdmissionBytes is the disk_admission threshold.
	DiskAdmissionBytes int64 `json:"disk_admission_bytes"`
	// FreeBytes is the free space of the ledger's filesystem (-1: unknown).
	FreeBytes int64 `json:"free_bytes"`
	// WALMaxBytes is the largest WAL seen since start; WALTruncations
	// counts the maintenance's WAL truncations.
	WALMaxBytes    int64 `json:"wal_max_bytes"`
	WALTruncations int64 `json:"wal_truncations"`
	// RetentionSeconds is the configured retention.
	RetentionSeconds int64 `json:"retention_seconds"`
	// BarrierActive is true while the restart barrier holds every payload
	// back from cleanup; BarrierEndsAt is when it lifts (Unix ms, as of
	// its last sample); BarrierReason why the window began ("start",
	// "clock_backward", "clock_drift"); BarrierResets how often it began
	// again since start.
	BarrierActive bool   `json:"barrier_active"`
	BarrierEndsAt int64  `json:"barrier_ends_at"`
	BarrierReason string `json:"barrier_reason"`
	BarrierResets int    `json:"barrier_resets"`
	// LastCleanupAt is when cleanup last ran (Unix ms; null before the
	// first run); LastCleanupDeleted how many payloads it deleted;
	// Cleanups and DeletedTotal count runs and deletions since start.
	LastCleanupAt      *int64 `json:"last_cleanup_at"`
	LastCleanupDeleted int    `json:"last_cleanup_deleted"`
	Cleanups           int    `json:"cleanups"`
	DeletedTotal       int64  `json:"deleted_total"`
	// OldestPayloadAgeSeconds is the idle age of the least recently used
	// stored output (0 when none is stored).
	OldestPayloadAgeSeconds int64 `json:"oldest_payload_age_seconds"`
}

// retentionStatus converts the ledger's life cycle.
func retentionStatus(l ledger.Lifecycle) *RetentionStatus {
	r := &RetentionStatus{
		GuardLatched:            l.GuardLatched,
		GuardPath:               l.GuardPath,
		GuardCause:              l.GuardCause,
		ReserveBytes:            l.ReserveBytes,
		ReserveWantedBytes:      l.ReserveWanted,
		ReserveError:            l.ReserveError,
		Admitting:               l.Admitting,
		DiskAdmissionBytes:      l.DiskAdmission,
		FreeBytes:               l.FreeBytes,
		WALMaxBytes:             l.WALMaxBytes,
		WALTruncations:          l.WALTruncations,
		RetentionSeconds:        int64(l.Retention.Seconds()),
		BarrierActive:           l.Barrier.Remaining > 0,
		BarrierEndsAt:           l.Barrier.SampledAt.Add(l.Barrier.Remaining).UnixMilli(),
		BarrierReason:           l.Barrier.Reason,
		BarrierResets:           l.Barrier.Resets,
		LastCleanupDeleted:      l.LastCleanup.Deleted,
		Cleanups:                l.Cleanups,
		DeletedTotal:            l.DeletedTotal,
		OldestPayloadAgeSeconds: int64(l.OldestAge.Seconds()),
	}
	if !l.LastCleanup.At.IsZero() {
		at := l.LastCleanup.At.UnixMilli()
		r.LastCleanupAt = &at
	}
	return r
}

// SnapshotStatus is the state of inspection snapshots.
type SnapshotStatus struct {
	// Running is true while a snapshot is being copied.
	Running bool `json:"running"`
	// Published is how many snapshots this process published.
	Published int64 `json:"published"`
	// Last is the most recently published file ("" if none).
	Last string `json:"last"`
	// Dir is where snapshots are published.
	Dir string `json:"dir"`
}

// aggCache keeps the last aggregates for aggregatesTTL.
var aggCache struct {
	mu    sync.Mutex
	store *ledger.Store
	at    time.Time
	agg   ledger.Aggregates
	err   error
	life  *RetentionStatus
}

// ledgerAggregates returns the store's aggregates and life cycle, read at
// most once per aggregatesTTL; concurrent callers wait for one read.
func ledgerAggregates(ctx context.Context, st *ledger.Store) (*LedgerStatus, *RetentionStatus) {
	aggCache.mu.Lock()
	defer aggCache.mu.Unlock()
	if aggCache.store != st || time.Since(aggCache.at) >= aggregatesTTL {
		agg, err := st.Inspect(ctx, 0)
		aggCache.store, aggCache.at, aggCache.agg, aggCache.err = st, time.Now(), agg, err
		aggCache.life = nil
		if l, lerr := st.Lifecycle(ctx); lerr == nil {
			aggCache.life = retentionStatus(l)
		} else if err == nil {
			aggCache.err = lerr
		}
	}
	ls := &LedgerStatus{Aggregates: aggCache.agg, AgeMillis: time.Since(aggCache.at).Milliseconds()}
	if aggCache.err != nil {
		ls.Error = aggCache.err.Error()
	}
	return ls, aggCache.life
}

// buildStatus gathers the status reply.
func buildStatus(ctx context.Context) Status {
	st := Status{
		StartedAt:     processStart.UTC().Format(time.RFC3339),
		UptimeSeconds: int64(time.Since(processStart).Seconds()),
		Requests:      map[string]map[string]int64{},
		Cache:         engineCounters.Values(),
		BodyLogDrops:  bodyLogDrops(),
		Admission: AdmissionStatus{
			PrepWaiting: relayCounters.prepWaiting.Load(),
			BodyBytes:   relayCounters.bodyBytes.Load(),
		},
	}
	for r, route := range routes {
		m := map[string]int64{}
		for o, outcome := range outcomes {
			m[outcome] = relayCounters.requests[r][o].Load()
		}
		st.Requests[route] = m
	}
	st.Usage.WithoutReplay = tokenUsage(0)
	st.Usage.WithReplay = tokenUsage(1)
	st.Snapshots = SnapshotStatus{Published: snapshotsPublished.Load()}
	if p := lastSnapshot.Load(); p != nil {
		st.Snapshots.Last = *p
	}
	a := activeApp.Load()
	if a == nil {
		return st
	}
	st.Database, st.Enabled = a.key, a.Enabled
	st.Snapshots.Dir = a.snapshotDir()
	awaitSettled(ctx)
	if a.engine != nil {
		s := a.engine.Stats()
		st.Sessions = SessionStatus{Active: s.Sessions, BytesInUse: s.BytesUsed, CapacityBytes: s.Capacity}
	}
	if a.holder != nil {
		store := a.holder.store
		st.Open = true
		st.Snapshots.Running = store.SnapshotRunning()
		st.Ledger, st.Retention = ledgerAggregates(ctx, store)
		ws := store.Stats()
		st.Writer = &ws
	}
	return st
}

func tokenUsage(i int) TokenUsage {
	t := &relayCounters.tokens[i]
	return TokenUsage{
		Responses:         relayCounters.responses[i].Load(),
		InputTokens:       t[0].Load(),
		CachedInputTokens: t[1].Load(),
		OutputTokens:      t[2].Load(),
		ReasoningTokens:   t[3].Load(),
	}
}

// statSize is the size of the file at p, or 0.
func statSize(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
