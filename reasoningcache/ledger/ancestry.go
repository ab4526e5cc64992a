package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// Linked prior plans. The planner replays a plan that is its last block's
// own recorded plan extended by that block. Storing each such plan in full
// on every observation made a conversation's plans and ancestry rows grow
// with the square of its length (a 200-turn conversation: 19,900 ancestry
// rows, 2.3 MB of plan JSON). Such an observation now stores its parent
// (the last block) in parent_id, an empty prior_plan, and one ancestry row
// to the parent; its plan is the parent's plan plus the parent, read back
// by walking parent_id. Any other plan is stored in full, with one
// ancestry row per block, as before. Cleanup follows ancestry rows
// transitively, so a parent row keeps the whole chain.

// linkedPlan is the prior_plan of an observation whose plan is linked.
const linkedPlan = ""

// ancestry is how a new observation records the plan it was produced with.
type ancestry struct {
	plan   []PlanBlock
	parent int64 // the last block's observation when linked, else 0
}

func (a ancestry) linked() bool { return a.parent != 0 }

// ancestryOf decides how to record an intent's plan.
func (w *wtx) ancestryOf(in intentRow) (ancestry, error) {
	var a ancestry
	if in.PlanCount == 0 {
		return a, nil
	}
	if err := json.Unmarshal([]byte(in.PlanJSON), &a.plan); err != nil {
		return a, fmt.Errorf("decode plan: %w", err)
	}
	if len(a.plan) == 0 {
		return a, nil
	}
	last := a.plan[len(a.plan)-1].ObservationID
	prior, err := w.s.priorPlan(w.ctx, w, last)
	if err != nil {
		// An unreadable parent plan (missing, over the limits,
		// inconsistent) is no reason to lose the observation: the plan
		// is stored in full, which is always correct.
		return a, nil
	}
	if len(prior) != len(a.plan)-1 {
		return a, nil
	}
	for i := range prior {
		if prior[i].ObservationID != a.plan[i].ObservationID {
			return a, nil
		}
	}
	a.parent = last
	return a, nil
}

// storeAncestry writes the ancestry rows of a new observation: one to the
// parent when linked, otherwise one per block.
func (w *wtx) storeAncestry(obsID int64, a ancestry) error {
	blocks := a.plan
	if a.linked() {
		blocks = a.plan[len(a.plan)-1:]
	}
	for _, st := range blocks {
		if _, err := w.ExecContext(w.ctx,
			`INSERT INTO dependencies (kind, observation_id, ancestor_id) VALUES ('ancestry', ?, ?)`,
			obsID, st.ObservationID); err != nil {
			return fmt.Errorf("store ancestry: %w", err)
		}
	}
	return nil
}

// walkPlan reads a linked plan back: from the parent up through parent_id
// until an observation whose plan is stored in full (or empty), at most
// MaxPlanBlocks+1 rows, in one statement.
const walkPlan = `
	WITH RECURSIVE up(id, parent, prior, count, payload, end_digest, depth) AS (
		SELECT observation_id, parent_id, prior_plan, plan_count, payload_id, end_digest, 1
		FROM observations WHERE observation_id = ?
		UNION ALL
		SELECT o.observation_id, o.parent_id, o.prior_plan, o.plan_count, o.payload_id, o.end_digest, up.depth + 1
		FROM observations o JOIN up ON o.observation_id = up.parent
		WHERE up.prior = '' AND up.count > 0 AND up.depth <= ?
	)
	SELECT id, prior, count, payload, end_digest, length(prior) FROM up ORDER BY depth`

// priorPlan returns the recorded plan of observation id: its prior_plan
// JSON, or, when linked, its parent's plan followed by its parent.
// ErrNotFound if the observation does not exist.
func (s *Store) priorPlan(ctx context.Context, q dbtx, id int64) ([]PlanBlock, error) {
	rows, err := q.QueryContext(ctx, walkPlan, id, s.opts.MaxPlanBlocks+1)
	if err != nil {
		return nil, fmt.Errorf("ledger: read plan of %d: %w", id, err)
	}
	defer rows.Close()
	var (
		rev  []PlanBlock // the linked blocks, newest first
		base []PlanBlock
		want int64 = -1
		seen bool
	)
	for rows.Next() {
		var (
			oid, count, n int64
			prior, end    string
			payload       sql.NullInt64
		)
		if err := rows.Scan(&oid, &prior, &count, &payload, &end, &n); err != nil {
			return nil, fmt.Errorf("ledger: read plan of %d: %w", id, err)
		}
		if !seen {
			seen, want = true, count
		} else {
			rev = append(rev, PlanBlock{ObservationID: oid, PayloadID: payload.Int64, EndDigest: end})
		}
		if prior != linkedPlan || count == 0 {
			if n > int64(s.opts.MaxPlanBytes) {
				return nil, fmt.Errorf("%w: observation %d plan of %d bytes", ErrTooLarge, oid, n)
			}
			if count > 0 || prior != linkedPlan {
				if base, err = s.decodePlan(prior, count); err != nil {
					return nil, fmt.Errorf("observation %d: %w", oid, err)
				}
			}
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: read plan of %d: %w", id, err)
	}
	if !seen {
		return nil, fmt.Errorf("%w: observation %d", ErrNotFound, id)
	}
	plan := make([]PlanBlock, 0, len(base)+len(rev))
	plan = append(plan, base...)
	for i := len(rev) - 1; i >= 0; i-- {
		plan = append(plan, rev[i])
	}
	if int64(len(plan)) != want {
		return nil, fmt.Errorf("ledger: observation %d: linked plan has %d blocks, row says %d", id, len(plan), want)
	}
	return plan, nil
}
