package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// CreateIntentRequest asks for a dispatch intent: "revalidate the plan,
// pin it, create the intent" as one atomic step.
type CreateIntentRequest struct {
	// Scope is created on first use.
	Scope Scope
	// Generation is the scope generation the plan was made against. Zero
	// means "whatever is current" and is only valid with an empty plan.
	Generation int64
	// StartDigest is the prefix digest where the new assistant output
	// starts; StartPosition is its message index.
	StartDigest   string
	StartPosition int64
	// Plan lists the earlier observations to replay, oldest first. Each
	// is revalidated: it exists in this scope and generation, is
	// replayable, still points at the same payload and end digest, and its
	// end digest carries no end-conflict marker.
	Plan []PlanStep
	// Deadline is when the dispatch is due to have finished (metadata for
	// inspection and retention; the ledger does not enforce it).
	Deadline time.Time
}

// CreateIntent validates req against the committed state and, if valid,
// creates a dispatch intent and pins the plan's observations. It returns
// the intent id once the batch has committed. Validation failures are
// *ValidationError with one of the reasons stale_generation,
// competing_intent (another unresolved intent starts at the same position
// and the plan is not empty), missing_ancestor, ancestor_mismatch,
// not_replayable, end_conflict or start_poisoned (a step's start).
//
// A start-poison at StartDigest itself does not refuse the intent: the
// poison covers the outputs at that position, which stay unreplayable
// there (every step is checked against its start), not the earlier blocks
// of the plan. So a retry at a poisoned position still replays its valid
// plan and is observed, and its record carries that plan on to later
// turns.
func (s *Store) CreateIntent(ctx context.Context, req CreateIntentRequest) (int64, error) {
	const op = "create_intent"
	if err := checkScope(op, req.Scope); err != nil {
		return 0, err
	}
	if err := checkDigest(op, "start digest", req.StartDigest); err != nil {
		return 0, err
	}
	if req.Generation == 0 && len(req.Plan) > 0 {
		return 0, invalid(op, ReasonInvalidArgument, "a plan needs the generation it was made against")
	}
	planJSON, err := s.encodePlan(op, req.Plan)
	if err != nil {
		return 0, err
	}
	var id int64
	err = s.submit(ctx, op, false, func(w *wtx) error {
		gen, err := w.ensureScope(req.Scope)
		if err != nil {
			return err
		}
		if req.Generation != 0 && req.Generation != gen {
			return invalid(op, ReasonStaleGeneration, "planned %d, current %d", req.Generation, gen)
		}
		if len(req.Plan) > 0 {
			var n int
			if err := w.QueryRowContext(w.ctx,
				`SELECT count(*) FROM intents WHERE scope_id = ? AND start_digest = ?`,
				req.Scope.ID, req.StartDigest).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return invalid(op, ReasonCompetingIntent, "%d unresolved at start %.12s", n, req.StartDigest)
			}
		}
		for i, st := range req.Plan {
			if err := w.checkStep(op, req.Scope.ID, gen, i, st); err != nil {
				return err
			}
		}
		res, err := w.ExecContext(w.ctx, `
			INSERT INTO intents (scope_id, generation, phase, start_digest, start_position, plan, plan_count, deadline_at, created_at, updated_at)
			VALUES (?, ?, 'dispatch', ?, ?, ?, ?, ?, ?, ?)`,
			req.Scope.ID, gen, req.StartDigest, req.StartPosition, planJSON, len(req.Plan),
			unixMs(req.Deadline), w.nowMs(), w.nowMs())
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		for _, st := range req.Plan {
			if _, err := w.ExecContext(w.ctx,
				`INSERT INTO dependencies (kind, intent_id, ancestor_id) VALUES ('pin', ?, ?)`,
				id, st.ObservationID); err != nil {
				return err
			}
		}
		if len(req.Plan) > 0 {
			// selected for dispatch: a retention touch, in this commit
			return w.touchPayloadsOf(planJSON)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return id, nil
}

// MoveToDelivery moves a dispatch intent to the delivery phase, recording
// the end digest the client is about to see. CommitObservation can do the
// same as part of its commit; use this when no observation is committed.
func (s *Store) MoveToDelivery(ctx context.Context, intentID int64, endDigest string) error {
	const op = "move_to_delivery"
	if err := checkDigest(op, "end digest", endDigest); err != nil {
		return err
	}
	return s.submit(ctx, op, false, func(w *wtx) error {
		return w.moveToDelivery(op, intentID, endDigest)
	})
}

// ResolveIntent removes an intent whose response was delivered (or whose
// failure is known and handled), releasing its pins. Resolving an intent
// that does not exist fails with reason intent_missing.
func (s *Store) ResolveIntent(ctx context.Context, intentID int64) error {
	const op = "resolve_intent"
	return s.submit(ctx, op, false, func(w *wtx) error {
		res, err := w.ExecContext(w.ctx, `DELETE FROM intents WHERE intent_id = ?`, intentID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return invalid(op, ReasonIntentMissing, "intent %d", intentID)
		}
		return nil
	})
}

// PoisonIntent ends an intent whose outcome is unknown (an interrupted
// stream, a capture that could not be checked): in one commit it writes
// start-poison markers for its positions (its start, and its end digest
// once it reached delivery), the same as startup recovery does, and
// removes it. reason is a fixed code of at most 64 bytes. Poisoning an
// intent that no longer exists fails with reason intent_missing.
func (s *Store) PoisonIntent(ctx context.Context, intentID int64, reason string) error {
	const op = "poison_intent"
	if reason == "" || len(reason) > 64 {
		return invalid(op, ReasonInvalidArgument, "reason code must be 1 to 64 bytes")
	}
	return s.submit(ctx, op, false, func(w *wtx) error {
		if _, err := w.intent(op, intentID); err != nil {
			return err
		}
		return w.poisonIntents(`intent_id = ?`, reason, intentID)
	})
}

// ExpireIntents poisons and removes, as PoisonIntent does, every intent
// not updated since before (an abandoned generation), and returns how
// many it removed.
func (s *Store) ExpireIntents(ctx context.Context, before time.Time, reason string) (int, error) {
	const op = "expire_intents"
	if reason == "" || len(reason) > 64 {
		return 0, invalid(op, ReasonInvalidArgument, "reason code must be 1 to 64 bytes")
	}
	var n int
	err := s.submit(ctx, op, false, func(w *wtx) error {
		var err error
		if err = w.QueryRowContext(w.ctx, `SELECT count(*) FROM intents WHERE updated_at < ?`, before.UnixMilli()).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return w.poisonIntents(`updated_at < ?`, reason, before.UnixMilli())
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// poisonIntents marks every position of the intents matching where and
// deletes them.
func (w *wtx) poisonIntents(where, reason string, arg any) error {
	if _, err := w.ExecContext(w.ctx, `
		INSERT INTO markers (scope_id, kind, digest, reason, intent_id, created_at)
		SELECT scope_id, 'start_poison', start_digest, ?, intent_id, ? FROM intents WHERE `+where+`
		UNION ALL
		SELECT scope_id, 'start_poison', end_digest, ?, intent_id, ? FROM intents WHERE end_digest != '' AND `+where+`
		ON CONFLICT (scope_id, digest, kind) DO NOTHING`, reason, w.nowMs(), arg, reason, w.nowMs(), arg); err != nil {
		return fmt.Errorf("poison intents: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM intents WHERE `+where, arg); err != nil {
		return fmt.Errorf("remove intents: %w", err)
	}
	return nil
}

// Outcome says what CommitObservation did.
type Outcome string

// Observation outcomes.
const (
	// OutcomeStored: a new observation (and payload, if admitted) was stored.
	OutcomeStored Outcome = "stored"
	// OutcomeRepeat: the same output was already observed at this end
	// digest in this generation; its payload was touched.
	OutcomeRepeat Outcome = "repeat"
	// OutcomeEndConflict: a different output was already observed at this
	// end digest; an end-conflict marker now covers it.
	OutcomeEndConflict Outcome = "end_conflict"
	// OutcomeConflicted: the end digest already carried an end-conflict
	// marker; nothing was stored.
	OutcomeConflicted Outcome = "conflicted"
)

// CommitObservationRequest is the observation of one finished upstream
// response. Scope, generation, start digest and prior plan are taken from
// the intent, so they cannot disagree with what was dispatched.
type CommitObservationRequest struct {
	// IntentID is the dispatch intent the response answers.
	IntentID   int64
	EndDigest  string // prefix digest after the predicted assistant envelope
	EnvelopeFP string // fingerprint of the predicted envelope
	PayloadFP  string // fingerprint of the original output
	OutputHash string // exact hash of the output as sent to the client
	// Replayable reports whether the output may be replayed later.
	Replayable bool
	// ModelSnapshot is the model snapshot the upstream reported for this
	// output ("" when unknown). A non-empty value is recorded on the
	// observation and marks the snapshot as seen by the scope now.
	ModelSnapshot string
	// Payload is the original output JSON; nil when not admitted.
	Payload json.RawMessage
	// MoveToDelivery also moves the intent to the delivery phase, in the
	// same commit.
	MoveToDelivery bool
}

// CommitResult is CommitObservation's answer.
type CommitResult struct {
	// Outcome classifies the commit.
	Outcome       Outcome
	ObservationID int64 // 0 unless stored or repeat
	PayloadID     int64 // 0 unless a payload is linked
}

// CommitObservation stores an observation, its payload and its ancestry
// (the intent's plan), classifying it as stored, repeat or conflict.
func (s *Store) CommitObservation(ctx context.Context, req CommitObservationRequest) (CommitResult, error) {
	const op = "commit_observation"
	var res CommitResult
	if err := checkDigest(op, "end digest", req.EndDigest); err != nil {
		return res, err
	}
	for _, f := range []struct{ n, v string }{{"envelope fingerprint", req.EnvelopeFP}, {"payload fingerprint", req.PayloadFP}, {"output hash", req.OutputHash}} {
		if err := checkDigest(op, f.n, f.v); err != nil {
			return res, err
		}
	}
	if len(req.ModelSnapshot) > 256 {
		return res, invalid(op, ReasonInvalidArgument, "model snapshot longer than 256 bytes")
	}
	if req.Payload != nil {
		if int64(len(req.Payload)) > s.opts.MaxPayloadBytes {
			return res, invalid(op, ReasonInvalidArgument, "payload is %d bytes, limit %d", len(req.Payload), s.opts.MaxPayloadBytes)
		}
		if !json.Valid(req.Payload) {
			return res, invalid(op, ReasonInvalidArgument, "payload is not valid JSON")
		}
	}
	err := s.submit(ctx, op, false, func(w *wtx) error {
		in, err := w.intent(op, req.IntentID)
		if err != nil {
			return err
		}
		if in.Phase != PhaseDispatch {
			return invalid(op, ReasonIntentPhase, "intent %d is in %s", in.ID, in.Phase)
		}
		if req.MoveToDelivery {
			if err := w.moveToDelivery(op, in.ID, req.EndDigest); err != nil {
				return err
			}
		}
		res, err = w.commitObservation(in, req)
		return err
	})
	if err != nil {
		return CommitResult{}, err
	}
	return res, nil
}

func (w *wtx) commitObservation(in intentRow, req CommitObservationRequest) (CommitResult, error) {
	var res CommitResult
	if req.Payload != nil && !w.s.life.admitting() {
		req.Payload = nil // disk pressure: observe, but admit no new payload
	}
	if req.ModelSnapshot != "" {
		// Every observation, whatever its outcome, shows the snapshot is
		// still served for this scope.
		if _, err := w.ExecContext(w.ctx, `
			INSERT INTO scope_snapshots (scope_id, snapshot, last_seen_at, last_seq)
			VALUES (?, ?, ?, (SELECT coalesce(max(last_seq), 0) + 1 FROM scope_snapshots WHERE scope_id = ?))
			ON CONFLICT (scope_id, snapshot) DO UPDATE SET last_seen_at = max(last_seen_at, excluded.last_seen_at),
				last_seq = excluded.last_seq`,
			in.ScopeID, req.ModelSnapshot, w.nowMs(), in.ScopeID); err != nil {
			return res, fmt.Errorf("record snapshot: %w", err)
		}
	}
	if conflicted, err := w.hasMarker(in.ScopeID, MarkerEndConflict, req.EndDigest); err != nil {
		return res, err
	} else if conflicted {
		res.Outcome = OutcomeConflicted
		return res, nil
	}
	var prevID int64
	var prevHash string
	var prevPayload sql.NullInt64
	err := w.QueryRowContext(w.ctx, `
		SELECT observation_id, output_hash, payload_id FROM observations
		WHERE scope_id = ? AND end_digest = ? AND generation = ?
		ORDER BY observation_id DESC LIMIT 1`, in.ScopeID, req.EndDigest, in.Generation).Scan(&prevID, &prevHash, &prevPayload)
	switch {
	case err == nil && prevHash == req.OutputHash:
		res.Outcome, res.ObservationID, res.PayloadID = OutcomeRepeat, prevID, prevPayload.Int64
		if prevPayload.Valid {
			if _, err := w.ExecContext(w.ctx, `UPDATE payloads SET touched_at = max(touched_at, ?) WHERE payload_id = ?`, w.nowMs(), prevPayload.Int64); err != nil {
				return res, err
			}
		}
		return res, nil
	case err == nil:
		if _, err := w.ExecContext(w.ctx, `
			INSERT INTO markers (scope_id, kind, digest, reason, intent_id, created_at)
			VALUES (?, 'end_conflict', ?, 'different_output', ?, ?)
			ON CONFLICT (scope_id, digest, kind) DO NOTHING`, in.ScopeID, req.EndDigest, in.ID, w.nowMs()); err != nil {
			return res, err
		}
		res.Outcome = OutcomeEndConflict
		return res, nil
	case !errors.Is(err, sql.ErrNoRows):
		return res, err
	}

	var payloadID sql.NullInt64
	if req.Payload != nil {
		// Payloads are content-addressed: the same original output is
		// stored once and touched again.
		err := w.QueryRowContext(w.ctx, `
			INSERT INTO payloads (fingerprint, output, size, touched_at) VALUES (?, ?, ?, ?)
			ON CONFLICT (fingerprint) DO UPDATE SET touched_at = max(touched_at, excluded.touched_at)
			RETURNING payload_id`, req.PayloadFP, string(req.Payload), len(req.Payload), w.nowMs()).Scan(&payloadID)
		if err != nil {
			return res, fmt.Errorf("store payload: %w", err)
		}
	}
	var snapshot int64
	if err := w.QueryRowContext(w.ctx, `
		UPDATE scopes SET latest_snapshot = latest_snapshot + 1, row_version = row_version + 1, updated_at = ?
		WHERE scope_id = ? RETURNING latest_snapshot`, w.nowMs(), in.ScopeID).Scan(&snapshot); err != nil {
		return res, fmt.Errorf("advance snapshot: %w", err)
	}
	anc, err := w.ancestryOf(in)
	if err != nil {
		return res, fmt.Errorf("store ancestry: %w", err)
	}
	prior, parent := in.PlanJSON, sql.NullInt64{}
	if anc.linked() {
		prior, parent = linkedPlan, sql.NullInt64{Int64: anc.parent, Valid: true}
	}
	r, err := w.ExecContext(w.ctx, `
		INSERT INTO observations (scope_id, generation, start_digest, end_digest, envelope_fp, payload_fp,
			output_hash, prior_plan, plan_count, intent_id, snapshot, replayable, payload_id, created_at, model_snapshot, parent_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		in.ScopeID, in.Generation, in.StartDigest, req.EndDigest, req.EnvelopeFP, req.PayloadFP,
		req.OutputHash, prior, in.PlanCount, in.ID, snapshot, req.Replayable && payloadID.Valid, payloadID, w.nowMs(),
		req.ModelSnapshot, parent)
	if err != nil {
		return res, fmt.Errorf("store observation: %w", err)
	}
	if res.ObservationID, err = r.LastInsertId(); err != nil {
		return res, err
	}
	if err := w.storeAncestry(res.ObservationID, anc); err != nil {
		return res, err
	}
	if in.PlanCount > 0 {
		// the plan's payloads are referenced by this answer: a touch
		if err := w.touchPayloadsOf(in.PlanJSON); err != nil {
			return res, fmt.Errorf("touch plan: %w", err)
		}
	}
	res.Outcome, res.PayloadID = OutcomeStored, payloadID.Int64
	return res, nil
}

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

// ensureScope creates the scope if needed and returns its generation.
func (w *wtx) ensureScope(sc Scope) (int64, error) {
	var gen int64
	err := w.QueryRowContext(w.ctx, `
		INSERT INTO scopes (scope_id, model, caller, created_at, updated_at) VALUES (?, ?, ?, ?, ?)
		ON CONFLICT (scope_id) DO UPDATE SET generation = generation
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

func (w *wtx) checkStep(op, scopeID string, gen int64, i int, st PlanStep) error {
	var (
		obsScope, start, end string
		obsGen, producer     int64
		replayable           bool
		payload              sql.NullInt64
	)
	err := w.QueryRowContext(w.ctx, `
		SELECT scope_id, generation, start_digest, end_digest, intent_id, replayable, payload_id
		FROM observations WHERE observation_id = ?`,
		st.ObservationID).Scan(&obsScope, &obsGen, &start, &end, &producer, &replayable, &payload)
	if errors.Is(err, sql.ErrNoRows) {
		return invalid(op, ReasonMissingAncestor, "step %d: observation %d", i, st.ObservationID)
	}
	if err != nil {
		return err
	}
	switch {
	case obsScope != scopeID:
		return invalid(op, ReasonAncestorMismatch, "step %d: observation %d is in another scope", i, st.ObservationID)
	case obsGen != gen:
		return invalid(op, ReasonStaleGeneration, "step %d: observation %d is from generation %d, current %d", i, st.ObservationID, obsGen, gen)
	case !replayable || !payload.Valid:
		return invalid(op, ReasonNotReplayable, "step %d: observation %d", i, st.ObservationID)
	case payload.Int64 != st.PayloadID || end != st.EndDigest:
		return invalid(op, ReasonAncestorMismatch, "step %d: observation %d changed", i, st.ObservationID)
	}
	if conflicted, err := w.hasMarker(scopeID, MarkerEndConflict, end); err != nil {
		return err
	} else if conflicted {
		return invalid(op, ReasonEndConflict, "step %d: end %.12s", i, end)
	}
	if poisoned, err := w.hasMarker(scopeID, MarkerStartPoison, start); err != nil {
		return err
	} else if poisoned {
		return invalid(op, ReasonStartPoisoned, "step %d: start %.12s", i, start)
	}
	// Another generation from the same start may still produce a
	// different output for this visible position; only the step's own
	// producing intent (still finishing its delivery) is allowed.
	var n int
	if err := w.QueryRowContext(w.ctx,
		`SELECT count(*) FROM intents WHERE scope_id = ? AND start_digest = ? AND intent_id != ?`,
		scopeID, start, producer).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return invalid(op, ReasonCompetingIntent, "step %d: %d unresolved at start %.12s", i, n, start)
	}
	return nil
}

type intentRow struct {
	Intent
	PlanJSON  string
	PlanCount int64
}

func (w *wtx) intent(op string, id int64) (intentRow, error) {
	var in intentRow
	err := w.QueryRowContext(w.ctx, `
		SELECT intent_id, scope_id, generation, phase, start_digest, start_position, end_digest, plan, plan_count
		FROM intents WHERE intent_id = ?`, id).Scan(&in.ID, &in.ScopeID, &in.Generation, &in.Phase,
		&in.StartDigest, &in.StartPosition, &in.EndDigest, &in.PlanJSON, &in.PlanCount)
	if errors.Is(err, sql.ErrNoRows) {
		return in, invalid(op, ReasonIntentMissing, "intent %d", id)
	}
	return in, err
}

func (w *wtx) moveToDelivery(op string, id int64, endDigest string) error {
	in, err := w.intent(op, id)
	if err != nil {
		return err
	}
	if in.Phase != PhaseDispatch {
		return invalid(op, ReasonIntentPhase, "intent %d is in %s", id, in.Phase)
	}
	_, err = w.ExecContext(w.ctx, `UPDATE intents SET phase = 'delivery', end_digest = ?, updated_at = ? WHERE intent_id = ?`,
		endDigest, w.nowMs(), id)
	return err
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
