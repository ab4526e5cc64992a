package ledger

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// storeAncestry records what a new observation depends on: the plan its
// intent replayed. Cleanup keeps an ancestor's payload while a descendant
// still has one, following these rows transitively, so a plan that is its
// last step's recorded plan extended by that step (what the planner
// replays) needs one row, to its parent; its parent's rows cover the rest.
// That keeps the rows per observation constant instead of growing with
// the conversation. Any other plan gets one row per step.
func (w *wtx) storeAncestry(obsID int64, in intentRow) error {
	if in.PlanCount == 0 {
		return nil
	}
	var plan []PlanStep
	if err := json.Unmarshal([]byte(in.PlanJSON), &plan); err != nil {
		return fmt.Errorf("store ancestry: decode plan: %w", err)
	}
	if len(plan) == 0 {
		return nil
	}
	steps := plan
	chain, err := w.extendsParentPlan(plan)
	if err != nil {
		return fmt.Errorf("store ancestry: %w", err)
	}
	if chain {
		steps = plan[len(plan)-1:]
	}
	for _, st := range steps {
		if _, err := w.ExecContext(w.ctx,
			`INSERT INTO dependencies (kind, observation_id, ancestor_id) VALUES ('ancestry', ?, ?)`,
			obsID, st.ObservationID); err != nil {
			return fmt.Errorf("store ancestry: %w", err)
		}
	}
	return nil
}

// extendsParentPlan reports whether plan is its last step's own recorded
// plan followed by that step.
func (w *wtx) extendsParentPlan(plan []PlanStep) (bool, error) {
	parent := plan[len(plan)-1].ObservationID
	var prior string
	var count int
	err := w.QueryRowContext(w.ctx, `SELECT prior_plan, plan_count FROM observations WHERE observation_id = ?`,
		parent).Scan(&prior, &count)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if count != len(plan)-1 {
		return false, nil
	}
	if count == 0 {
		return true, nil
	}
	var got []PlanStep
	if err := json.Unmarshal([]byte(prior), &got); err != nil || len(got) != count {
		return false, nil
	}
	for i := range got {
		if got[i].ObservationID != plan[i].ObservationID {
			return false, nil
		}
	}
	return true, nil
}
