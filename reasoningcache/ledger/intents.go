package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// CreateIntentRequest asks for a dispatch intent: "revalidate the plan,
// pin it, create the intent" as one atomic block.
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
	Plan []PlanBlock
	// Deadline is when the dispatch is due to have finished (metadata for
	// inspection and retention; the ledger does not enforce it).
	Deadline time.Time
}

// CreateIntent validates req against the committed state and, if valid,
// creates a dispatch intent and pins the plan's observations. It returns
// the intent id once the batch has committed. Validation failures are
// *ValidationError with one of the reasons stale_generation,
// competing_intent (another unresolved intent starts at the same position
// and the plan is not empty; when every such intent is in delivery,
// CreateIntent first waits up to DeliveryWait for one of them to end and
// tries again), missing_ancestor, ancestor_mismatch,
// not_replayable, end_conflict or start_poisoned (a block's start).
//
// A start-poison at StartDigest itself does not refuse the intent: the
// poison covers the outputs at that position, which stay unreplayable
// there (every block is checked against its start), not the earlier blocks
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
	// A plan refused only for intents in delivery at its start is retried
	// when an intent end is queued, for up to DeliveryWait.
	var deadline time.Time
	for {
		ends := s.ends.next()
		id, delivering, err := s.createIntent(ctx, req, planJSON)
		if err == nil || !delivering {
			return id, err
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(deliveryWait)
			if h := testHookDeliveryWait; h != nil {
				h()
			}
		}
		t := time.NewTimer(time.Until(deadline))
		select {
		case <-ends:
			t.Stop()
		case <-t.C:
			return 0, err
		case <-ctx.Done():
			t.Stop()
			return 0, err
		}
	}
}

// createIntent is one attempt of CreateIntent; delivering reports a
// refusal for competing intents at the start that are all in delivery.
func (s *Store) createIntent(ctx context.Context, req CreateIntentRequest, planJSON string) (id int64, delivering bool, err error) {
	const op = "create_intent"
	err = s.submit(ctx, op, false, func(w *wtx) error {
		delivering = false
		gen, err := w.ensureScope(req.Scope)
		if err != nil {
			return err
		}
		if req.Generation != 0 && req.Generation != gen {
			return invalid(op, ReasonStaleGeneration, "planned %d, current %d", req.Generation, gen)
		}
		if len(req.Plan) > 0 {
			var n, dispatching int
			if err := w.QueryRowContext(w.ctx,
				`SELECT count(*), coalesce(sum(phase = 'dispatch'), 0) FROM intents WHERE scope_id = ? AND start_digest = ?`,
				req.Scope.ID, req.StartDigest).Scan(&n, &dispatching); err != nil {
				return err
			}
			if n > 0 {
				delivering = dispatching == 0
				return invalid(op, ReasonCompetingIntent, "%d unresolved at start %.12s", n, req.StartDigest)
			}
		}
		if err := w.checkPlan(op, req.Scope.ID, gen, req.Plan); err != nil {
			return err
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
		// The intent row, with its plan, is the plan's pin: cleanup keeps
		// every payload an unresolved intent's plan names (see
		// eligiblePayloads), and the pin goes with the row. Pin rows in
		// dependencies, one per block, cost four more pages in this
		// commit and again when the intent is resolved.
		if len(req.Plan) == 0 {
			return nil
		}
		// selected for dispatch: a retention touch, in this commit
		return w.touch(planPayloads(req.Plan)...)
	})
	if err != nil {
		return 0, delivering, err
	}
	return id, false, nil
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
	return s.queued(ctx, "resolve_intent", false, resolveIntent(intentID))()
}

func resolveIntent(intentID int64) applyFunc {
	return func(w *wtx) error {
		return w.execIntent("resolve_intent", intentID, `DELETE FROM intents WHERE intent_id = ?`)
	}
}

// PoisonIntent ends an intent whose outcome is unknown (an interrupted
// stream, a recording that could not be checked): in one commit it writes
// start-poison markers for its positions (its start, and its end digest
// once it reached delivery), the same as startup recovery does, and
// removes it. reason is a fixed code of at most 64 bytes. Poisoning an
// intent that no longer exists fails with reason intent_missing.
func (s *Store) PoisonIntent(ctx context.Context, intentID int64, reason string) error {
	return s.poisonIntent(ctx, intentID, reason, false)()
}

func poisonIntent(intentID int64, reason string) applyFunc {
	return func(w *wtx) error {
		if _, err := w.intent("poison_intent", intentID); err != nil {
			return err
		}
		return w.poisonIntents(`intent_id = ?`, reason, intentID)
	}
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

// poisonIntents marks every position of the intents matching where (its
// placeholders bound to args) and deletes them.
func (w *wtx) poisonIntents(where, reason string, args ...any) error {
	now := w.nowMs()
	bind := append([]any{reason, now}, args...)
	bind = append(append(bind, reason, now), args...)
	if _, err := w.ExecContext(w.ctx, `
		INSERT INTO markers (scope_id, kind, digest, reason, intent_id, created_at)
		SELECT scope_id, 'start_poison', start_digest, ?, intent_id, ? FROM intents WHERE `+where+`
		UNION ALL
		SELECT scope_id, 'start_poison', end_digest, ?, intent_id, ? FROM intents WHERE end_digest != '' AND `+where+`
		ON CONFLICT (scope_id, digest, kind) DO NOTHING`, bind...); err != nil {
		return fmt.Errorf("poison intents: %w", err)
	}
	if _, err := w.ExecContext(w.ctx, `DELETE FROM intents WHERE `+where, args...); err != nil {
		return fmt.Errorf("remove intents: %w", err)
	}
	return nil
}

// execIntent runs query, whose last placeholder is the intent id, and
// fails with reason intent_missing when no intent row matched.
func (w *wtx) execIntent(op string, id int64, query string, args ...any) error {
	res, err := w.ExecContext(w.ctx, query, append(args, id)...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return invalid(op, ReasonIntentMissing, "intent %d", id)
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
	return w.deliver(op, in, endDigest)
}

// deliver moves intent in, already read in this operation, to the
// delivery phase.
func (w *wtx) deliver(op string, in intentRow, endDigest string) error {
	if in.Phase != PhaseDispatch {
		return invalid(op, ReasonIntentPhase, "intent %d is in %s", in.ID, in.Phase)
	}
	_, err := w.ExecContext(w.ctx, `UPDATE intents SET phase = 'delivery', end_digest = ?, updated_at = ? WHERE intent_id = ?`,
		endDigest, w.nowMs(), in.ID)
	return err
}
