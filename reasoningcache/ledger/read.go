package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Candidates returns the current generation's observations in scopeID
// whose end digest is endDigest, newest first, at most
// Options.MaxCandidates. Plans over the size limits are never loaded; such
// a row fails the call with ErrTooLarge.
func (s *Store) Candidates(ctx context.Context, scopeID, endDigest string) ([]Observation, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT o.observation_id, o.scope_id, o.generation, o.start_digest, o.end_digest, o.envelope_fp,
			o.payload_fp, o.output_hash, o.plan_count, length(o.prior_plan),
			CASE WHEN length(o.prior_plan) <= ? AND o.plan_count <= ? THEN o.prior_plan END,
			o.intent_id, o.snapshot, o.replayable, o.payload_id, o.created_at, o.row_version, o.model_snapshot
		FROM observations o JOIN scopes sc ON sc.scope_id = o.scope_id AND sc.generation = o.generation
		WHERE o.scope_id = ? AND o.end_digest = ?
		ORDER BY o.observation_id DESC LIMIT ?`,
		s.opts.MaxPlanBytes, s.opts.MaxPlanBlocks, scopeID, endDigest, s.opts.MaxCandidates)
	if err != nil {
		return nil, fmt.Errorf("ledger: candidates: %w", err)
	}
	defer rows.Close()
	var (
		out    []Observation
		linked []int // indexes of out whose plan is linked
	)
	for rows.Next() {
		var (
			o          Observation
			count, n   int64
			plan       sql.NullString
			payload    sql.NullInt64
			createdAtM int64
		)
		if err := rows.Scan(&o.ID, &o.ScopeID, &o.Generation, &o.StartDigest, &o.EndDigest, &o.EnvelopeFP,
			&o.PayloadFP, &o.OutputHash, &count, &n, &plan, &o.IntentID, &o.Seq, &o.Replayable,
			&payload, &createdAtM, &o.RowVersion, &o.ModelSnapshot); err != nil {
			return nil, fmt.Errorf("ledger: candidates: %w", err)
		}
		if !plan.Valid {
			return nil, fmt.Errorf("%w: observation %d has a plan of %d blocks, %d bytes", ErrTooLarge, o.ID, count, n)
		}
		if plan.String == linkedPlan && count > 0 {
			linked = append(linked, len(out))
		} else if o.PriorPlan, err = s.decodePlan(plan.String, count); err != nil {
			return nil, fmt.Errorf("observation %d: %w", o.ID, err)
		}
		o.PayloadID = payload.Int64
		o.CreatedAt = time.UnixMilli(createdAtM)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: candidates: %w", err)
	}
	rows.Close()
	for _, i := range linked {
		if out[i].PriorPlan, err = s.priorPlan(ctx, s.reads, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Markers returns the markers (of either kind) at digest in scopeID.
func (s *Store) Markers(ctx context.Context, scopeID, digest string) ([]Marker, error) {
	return s.MarkersAt(ctx, scopeID, []string{digest})
}

// ScopeState returns a scope's row; ok is false if the scope is unknown.
func (s *Store) ScopeState(ctx context.Context, scopeID string) (st ScopeState, ok bool, err error) {
	if s.isClosed() {
		return st, false, ErrClosed
	}
	err = s.reads.QueryRowContext(ctx, `
		SELECT scope_id, model, caller, generation, latest_snapshot, row_version FROM scopes WHERE scope_id = ?`,
		scopeID).Scan(&st.ID, &st.Model, &st.Caller, &st.Generation, &st.LatestSeq, &st.RowVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return st, false, nil
	}
	if err != nil {
		return st, false, fmt.Errorf("ledger: scope: %w", err)
	}
	return st, true, nil
}

// ScopeGeneration returns a scope's current generation, or 0 if the scope
// is unknown (generations start at 1).
func (s *Store) ScopeGeneration(ctx context.Context, scopeID string) (int64, error) {
	st, ok, err := s.ScopeState(ctx, scopeID)
	if err != nil || !ok {
		return 0, err
	}
	return st.Generation, nil
}

// Payload returns a payload by id. Its size is checked against
// Options.MaxPayloadBytes before the JSON is loaded. Payloads come from a
// small bounded cache when the cached row version is still current; the
// returned Output is shared and must not be modified. Output is valid
// JSON: it is checked once, when it is loaded from the database.
func (s *Store) Payload(ctx context.Context, id int64) (*Payload, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	var (
		p       Payload
		touched int64
		stored  int64
	)
	err := s.reads.QueryRowContext(ctx, `
		SELECT payload_id, fingerprint, size, length(CAST(output AS BLOB)), touched_at, row_version
		FROM payloads WHERE payload_id = ?`, id).Scan(&p.ID, &p.Fingerprint, &p.Size, &stored, &touched, &p.RowVersion)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: payload %d", ErrNotFound, id)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: payload %d: %w", id, err)
	}
	p.TouchedAt = time.UnixMilli(touched)
	if err := s.loadOutput(ctx, &p, stored); err != nil {
		return nil, err
	}
	return &p, nil
}

// loadOutput checks the size of a payload whose metadata p holds (stored
// is the stored output's length) and sets p.Output, from the hot cache
// when its row version is current, else from the database.
func (s *Store) loadOutput(ctx context.Context, p *Payload, stored int64) error {
	id := p.ID
	if stored != p.Size || p.Size > s.opts.MaxPayloadBytes {
		return fmt.Errorf("%w: payload %d is %d bytes (row says %d), limit %d", ErrTooLarge, id, stored, p.Size, s.opts.MaxPayloadBytes)
	}
	if out, ok := s.cache.get(id, p.RowVersion); ok {
		p.Output = out
		return nil
	}
	var out string
	err := s.reads.QueryRowContext(ctx, `SELECT output FROM payloads WHERE payload_id = ? AND row_version = ?`,
		id, p.RowVersion).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: payload %d changed while reading", ErrNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("ledger: payload %d: %w", id, err)
	}
	p.Output = []byte(out)
	if !json.Valid(p.Output) {
		// admitted payloads are valid JSON: this one was damaged
		return fmt.Errorf("ledger: payload %d is not valid JSON", id)
	}
	s.cache.put(id, p.RowVersion, p.Output)
	return nil
}

// UnresolvedIntents lists the intents not yet resolved, oldest first (for
// inspection; at most limit rows).
func (s *Store) UnresolvedIntents(ctx context.Context, limit int) ([]Intent, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	rows, err := s.reads.QueryContext(ctx, `
		SELECT `+intentColumns+`, plan_count, CASE WHEN length(plan) <= ? AND plan_count <= ? THEN plan END
		FROM intents ORDER BY intent_id LIMIT ?`, s.opts.MaxPlanBytes, s.opts.MaxPlanBlocks, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger: intents: %w", err)
	}
	return s.scanIntents(rows, true)
}

// intentColumns are the intent columns scanIntents reads first.
const intentColumns = `intent_id, scope_id, generation, phase, start_digest, start_position, end_digest, deadline_at, created_at`

// scanIntents reads and closes rows of intentColumns, followed, withPlan,
// by plan_count and the plan (NULL when over the size limits).
func (s *Store) scanIntents(rows *sql.Rows, withPlan bool) ([]Intent, error) {
	defer rows.Close()
	var out []Intent
	for rows.Next() {
		var (
			in                 Intent
			count, dl, created int64
			plan               sql.NullString
		)
		dest := []any{&in.ID, &in.ScopeID, &in.Generation, &in.Phase, &in.StartDigest, &in.StartPosition,
			&in.EndDigest, &dl, &created}
		if withPlan {
			dest = append(dest, &count, &plan)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("ledger: intents: %w", err)
		}
		if withPlan {
			if !plan.Valid {
				return nil, fmt.Errorf("%w: intent %d plan", ErrTooLarge, in.ID)
			}
			var err error
			if in.Plan, err = s.decodePlan(plan.String, count); err != nil {
				return nil, fmt.Errorf("intent %d: %w", in.ID, err)
			}
		}
		if dl != 0 {
			in.Deadline = time.UnixMilli(dl)
		}
		in.CreatedAt = time.UnixMilli(created)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: intents: %w", err)
	}
	return out, nil
}

// CoverageGap reports whether a coverage gap is recorded (the cache was
// disabled while the relay served requests).
func (s *Store) CoverageGap(ctx context.Context) (bool, error) {
	if s.isClosed() {
		return false, ErrClosed
	}
	var gap bool
	if err := s.reads.QueryRowContext(ctx, `SELECT coverage_gap FROM meta`).Scan(&gap); err != nil {
		return false, fmt.Errorf("ledger: coverage gap: %w", err)
	}
	return gap, nil
}
