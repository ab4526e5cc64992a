package ledger

import (
	"context"
	"fmt"
	"time"
)

// DefaultInspectRows is how many rows Inspect counts at most per table.
const DefaultInspectRows = 1 << 20

// Figure is a count that is exact, or a lower bound when counting stopped
// at the row limit.
type Figure struct {
	// Value is the count (or sum).
	Value int64 `json:"value"`
	// Exact is false when Value is a lower bound.
	Exact bool `json:"exact"`
}

// Aggregates describe the ledger's content and files at one moment. The
// JSON names are an interface: scripts read them from the admin API.
type Aggregates struct {
	// Scopes is the number of cache scopes (model, settings and credential
	// combinations seen).
	Scopes Figure `json:"scopes"`
	// Observations is the number of recorded assistant turns.
	Observations Figure `json:"observations"`
	// ReplayableObservations is the number of those that may be replayed
	// (they have a payload and were admitted).
	ReplayableObservations Figure `json:"replayable_observations"`
	// Payloads is the number of stored original outputs.
	Payloads Figure `json:"payloads"`
	// PayloadBytes is their total size in bytes (JSON text).
	PayloadBytes Figure `json:"payload_bytes"`
	// StartPoisonMarkers is the number of positions nothing may be
	// replayed from (interrupted or unrecordable responses).
	StartPoisonMarkers Figure `json:"start_poison_markers"`
	// EndConflictMarkers is the number of turns never replayed because
	// they were produced twice differently or rejected upstream.
	EndConflictMarkers Figure `json:"end_conflict_markers"`
	// Intents is the number of upstream generations in flight (dispatched
	// and not yet resolved) according to the ledger.
	Intents Figure `json:"intents"`
	// CoverageGap is true while a gap is recorded: the next enabled start
	// stops replaying everything recorded before it.
	CoverageGap bool `json:"coverage_gap"`
	// OldestPayloadTouchedAt is when the least recently used payload was
	// last used (Unix milliseconds; 0 without payloads).
	OldestPayloadTouchedAt int64 `json:"oldest_payload_touched_at"`
	// OldestPayloadIdleSeconds is how long ago that was.
	OldestPayloadIdleSeconds int64 `json:"oldest_payload_idle_seconds"`
	// DatabaseBytes is the size of the database file.
	DatabaseBytes int64 `json:"database_bytes"`
	// WALBytes is the size of its write-ahead log (-wal file).
	WALBytes int64 `json:"wal_bytes"`
	// PageBytes is the database's page size; PageCount and FreePages
	// its pages in use and on the free list.
	PageBytes int64 `json:"page_bytes"`
	PageCount int64 `json:"page_count"`
	FreePages int64 `json:"free_pages"`
	// FormatVersion is the schema version of the database.
	FormatVersion int64 `json:"format_version"`
	// OpenedCount is how many times a relay has taken ownership of the
	// database.
	OpenedCount int64 `json:"opened_count"`
	// OwnerSince is when the current owner took the database (Unix
	// milliseconds).
	OwnerSince int64 `json:"owner_since"`
	// TookMillis is how long gathering these figures took.
	TookMillis int64 `json:"took_ms"`
	// At is when they were gathered (Unix milliseconds).
	At int64 `json:"at"`
}

// Inspect gathers Aggregates with plain reads on one pooled connection,
// inside one read transaction (a consistent view). Each count stops at
// maxRows rows (DefaultInspectRows when <= 0) and then says it is a lower
// bound. It writes nothing: no payload is touched, no intent renewed, no
// clock advanced, no checkpoint or cleanup run.
func (s *Store) Inspect(ctx context.Context, maxRows int64) (agg Aggregates, err error) {
	if s.isClosed() {
		return agg, ErrClosed
	}
	if maxRows <= 0 {
		maxRows = DefaultInspectRows
	}
	start := time.Now()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return agg, fmt.Errorf("ledger: inspect %s: %w", s.path, err)
	}
	defer conn.Close()
	// a deferred (read) transaction: the pool's BeginTx would be
	// IMMEDIATE and take the write lock
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return agg, fmt.Errorf("ledger: inspect %s: begin: %w", s.path, err)
	}
	defer func() { _, _ = conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK") }()

	counts := []struct {
		dst   *Figure
		sum   *Figure
		query string
	}{
		{&agg.Scopes, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM scopes LIMIT ?1)`},
		{&agg.Observations, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM observations LIMIT ?1)`},
		{&agg.ReplayableObservations, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM observations WHERE replayable = 1 LIMIT ?1)`},
		{&agg.Payloads, &agg.PayloadBytes, `SELECT count(*), coalesce(sum(size), 0) FROM (SELECT size FROM payloads LIMIT ?1)`},
		{&agg.StartPoisonMarkers, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM markers WHERE kind = 'start_poison' LIMIT ?1)`},
		{&agg.EndConflictMarkers, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM markers WHERE kind = 'end_conflict' LIMIT ?1)`},
		{&agg.Intents, nil, `SELECT count(*), 0 FROM (SELECT 1 FROM intents LIMIT ?1)`},
	}
	for _, c := range counts {
		var n, sum int64
		if err := conn.QueryRowContext(ctx, c.query, maxRows).Scan(&n, &sum); err != nil {
			return agg, fmt.Errorf("ledger: inspect %s: %w", s.path, err)
		}
		*c.dst = Figure{Value: n, Exact: n < maxRows}
		if c.sum != nil {
			*c.sum = Figure{Value: sum, Exact: n < maxRows}
		}
	}
	var oldest *int64
	if err := conn.QueryRowContext(ctx, `SELECT min(touched_at) FROM payloads`).Scan(&oldest); err != nil {
		return agg, fmt.Errorf("ledger: inspect %s: oldest payload: %w", s.path, err)
	}
	now := s.opts.Now()
	if oldest != nil {
		agg.OldestPayloadTouchedAt = *oldest
		agg.OldestPayloadIdleSeconds = max(0, now.UnixMilli()-*oldest) / 1000
	}
	if err := conn.QueryRowContext(ctx, `SELECT coverage_gap, format_version, opened_count, owner_since FROM meta`).
		Scan(&agg.CoverageGap, &agg.FormatVersion, &agg.OpenedCount, &agg.OwnerSince); err != nil {
		return agg, fmt.Errorf("ledger: inspect %s: meta: %w", s.path, err)
	}
	for _, p := range []struct {
		name string
		dst  *int64
	}{{"page_size", &agg.PageBytes}, {"page_count", &agg.PageCount}, {"freelist_count", &agg.FreePages}} {
		if err := conn.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(p.dst); err != nil {
			return agg, fmt.Errorf("ledger: inspect %s: %s: %w", s.path, p.name, err)
		}
	}
	agg.DatabaseBytes = fileSize(s.path)
	agg.WALBytes = fileSize(s.path + "-wal")
	agg.At = now.UnixMilli()
	agg.TookMillis = time.Since(start).Milliseconds()
	return agg, nil
}
