package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// SnapshotSeenGranularity is how old the last sighting of a scope's
// latest model snapshot must be before an observation writes it again.
// Sightings matter only for a snapshot that is no longer the latest (it
// is accepted for a day after its last sighting), so a latest snapshot's
// sighting may lag by this much: it then stops being accepted up to this
// much earlier, never later.
const SnapshotSeenGranularity = time.Minute

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
			if err := w.deliver(op, in, req.EndDigest); err != nil {
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
		// still served for this scope. The scope's latest snapshot seen
		// within SnapshotSeenGranularity is left as it is: its order
		// cannot change, and its row stays out of the commit.
		if _, err := w.ExecContext(w.ctx, `
			INSERT INTO scope_snapshots (scope_id, snapshot, last_seen_at, last_seq)
			VALUES (?, ?, ?, (SELECT coalesce(max(last_seq), 0) + 1 FROM scope_snapshots WHERE scope_id = ?))
			ON CONFLICT (scope_id, snapshot) DO UPDATE SET last_seen_at = max(last_seen_at, excluded.last_seen_at),
				last_seq = excluded.last_seq
			WHERE last_seq != excluded.last_seq - 1 OR last_seen_at < excluded.last_seen_at - ?`,
			in.ScopeID, req.ModelSnapshot, w.nowMs(), in.ScopeID, SnapshotSeenGranularity.Milliseconds()); err != nil {
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
			if err := w.touch(prevPayload.Int64); err != nil {
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
		// stored or touched now: as good as a written touch
		id, now := payloadID.Int64, w.nowMs()
		w.onCommit = append(w.onCommit, func() { w.s.touched.wrote([]int64{id}, now) })
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
		if err := w.touch(planPayloads(anc.plan)...); err != nil {
			return res, fmt.Errorf("touch plan: %w", err)
		}
	}
	res.Outcome, res.PayloadID = OutcomeStored, payloadID.Int64
	return res, nil
}
