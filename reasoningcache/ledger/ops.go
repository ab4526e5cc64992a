package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// WriteMarkers writes start-poison or end-conflict markers for one scope
// (creating the scope on first use). Existing markers are kept as they
// are. It returns how many markers are new.
func (s *Store) WriteMarkers(ctx context.Context, scope Scope, markers []Marker) (int, error) {
	const op = "write_markers"
	if err := checkScope(op, scope); err != nil {
		return 0, err
	}
	for i, m := range markers {
		if m.ScopeID != "" && m.ScopeID != scope.ID {
			return 0, invalid(op, ReasonInvalidArgument, "marker %d belongs to another scope", i)
		}
		if m.Kind != MarkerStartPoison && m.Kind != MarkerEndConflict {
			return 0, invalid(op, ReasonInvalidArgument, "marker %d has unknown kind", i)
		}
		if err := checkDigest(op, "marker digest", m.Digest); err != nil {
			return 0, err
		}
		if m.Reason == "" || len(m.Reason) > 64 {
			return 0, invalid(op, ReasonInvalidArgument, "marker %d needs a reason code of at most 64 bytes", i)
		}
	}
	var added int
	err := s.submit(ctx, op, false, func(w *wtx) error {
		added = 0
		if _, err := w.ensureScope(scope); err != nil {
			return err
		}
		for _, m := range markers {
			r, err := w.ExecContext(w.ctx, `
				INSERT INTO markers (scope_id, kind, digest, reason, intent_id, created_at)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (scope_id, digest, kind) DO NOTHING`,
				scope.ID, m.Kind, m.Digest, m.Reason, m.IntentID, w.nowMs())
			if err != nil {
				return err
			}
			n, _ := r.RowsAffected()
			added += int(n)
		}
		return nil
	})
	return added, err
}

// AdvanceGenerations advances the generation of the given scopes, or of
// every scope when none is given: their observations stop being
// candidates. Payloads and markers are kept. It returns how many scopes
// advanced.
func (s *Store) AdvanceGenerations(ctx context.Context, scopeIDs ...string) (int64, error) {
	const op = "advance_generations"
	var n int64
	err := s.submit(ctx, op, false, func(w *wtx) error {
		n = 0
		if len(scopeIDs) == 0 {
			r, err := w.ExecContext(w.ctx, `UPDATE scopes SET generation = generation + 1, row_version = row_version + 1, updated_at = ?`, w.nowMs())
			if err != nil {
				return err
			}
			n, _ = r.RowsAffected()
			return nil
		}
		for _, id := range scopeIDs {
			r, err := w.ExecContext(w.ctx, `UPDATE scopes SET generation = generation + 1, row_version = row_version + 1, updated_at = ? WHERE scope_id = ?`, w.nowMs(), id)
			if err != nil {
				return err
			}
			k, _ := r.RowsAffected()
			n += k
		}
		return nil
	})
	return n, err
}

// TouchPayloads records that payloads were used at time at (retention
// evicts the least recently touched). Unknown ids are ignored.
func (s *Store) TouchPayloads(ctx context.Context, at time.Time, ids ...int64) error {
	const op = "touch_payloads"
	if len(ids) == 0 {
		return nil
	}
	return s.submit(ctx, op, false, func(w *wtx) error {
		for _, id := range ids {
			if _, err := w.ExecContext(w.ctx, `UPDATE payloads SET touched_at = max(touched_at, ?) WHERE payload_id = ?`, unixMs(at), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// SetEnabled switches the store between enabled and disabled without
// giving up ownership (a `caddy reload` that flips `enabled`). Disabling
// records a coverage gap; enabling consumes it by advancing every scope's
// generation. Both are durable before SetEnabled returns.
func (s *Store) SetEnabled(ctx context.Context, enabled bool) error {
	if s.enabled.Load() == enabled {
		return nil
	}
	if s.life.guarded.Load() {
		// A latched store stays off, with its coverage gap, until restart.
		s.enabled.Store(enabled)
		return nil
	}
	err := s.submit(ctx, "set_enabled", true, func(w *wtx) error {
		if !enabled {
			_, err := w.ExecContext(w.ctx, `UPDATE meta SET coverage_gap = 1`)
			return err
		}
		var gap bool
		if err := w.QueryRowContext(w.ctx, `SELECT coverage_gap FROM meta`).Scan(&gap); err != nil {
			return err
		}
		if gap {
			return consumeGap(w.ctx, w, w.nowMs())
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.enabled.Store(enabled)
	return nil
}

// --- helpers used inside the writer ---

func checkScope(op string, sc Scope) error {
	if err := checkDigest(op, "scope id", sc.ID); err != nil {
		return err
	}
	if len(sc.Model) > 256 || len(sc.Caller) > 256 {
		return invalid(op, ReasonInvalidArgument, "scope model or caller longer than 256 bytes")
	}
	return nil
}

// ensureScope creates the scope if needed and returns its generation. A
// scope exists after its first request, so it reads first: an upsert
// would run the update half (a no-op row rewrite) on every intent.
func (w *wtx) ensureScope(sc Scope) (int64, error) {
	var gen int64
	err := w.QueryRowContext(w.ctx, `SELECT generation FROM scopes WHERE scope_id = ?`, sc.ID).Scan(&gen)
	if err == nil {
		return gen, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("ensure scope: %w", err)
	}
	err = w.QueryRowContext(w.ctx, `
		INSERT INTO scopes (scope_id, model, caller, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		RETURNING generation`, sc.ID, sc.Model, sc.Caller, w.nowMs(), w.nowMs()).Scan(&gen)
	if err != nil {
		return 0, fmt.Errorf("ensure scope: %w", err)
	}
	return gen, nil
}

func (w *wtx) hasMarker(scopeID, kind, digest string) (bool, error) {
	var one int
	err := w.QueryRowContext(w.ctx, `SELECT 1 FROM markers WHERE scope_id = ? AND digest = ? AND kind = ?`, scopeID, digest, kind).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
