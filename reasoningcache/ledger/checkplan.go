package ledger

import (
	"database/sql"
)

// blockRow is what checkPlan reads of a plan block's observation.
type blockRow struct {
	scope, start, end string
	gen, producer     int64
	replayable        bool
	payload           sql.NullInt64
}

// checkPlan revalidates a plan inside the writer's transaction, block by
// block in order, and fails with the first invalid block's reason: the
// observation exists in this scope and generation, is replayable with
// the same payload and end digest, its end carries no end-conflict marker
// and its start no start-poison marker, and no unresolved intent other
// than its own producing one starts where it starts. The state is read
// with three statements for the whole plan instead of four per block.
func (w *wtx) checkPlan(op, scopeID string, gen int64, plan []PlanBlock) error {
	if len(plan) == 0 {
		return nil
	}
	rows, err := w.planRows(op, plan)
	if err != nil {
		return err
	}
	var digests, starts []string
	for _, r := range rows {
		digests = append(digests, r.start, r.end)
		starts = append(starts, r.start)
	}
	marked, err := w.markersAt(op, scopeID, digests)
	if err != nil {
		return err
	}
	intents, err := w.intentsAt(op, scopeID, starts)
	if err != nil {
		return err
	}
	for i, st := range plan {
		r, ok := rows[st.ObservationID]
		switch {
		case !ok:
			return invalid(op, ReasonMissingAncestor, "block %d: observation %d", i, st.ObservationID)
		case r.scope != scopeID:
			return invalid(op, ReasonAncestorMismatch, "block %d: observation %d is in another scope", i, st.ObservationID)
		case r.gen != gen:
			return invalid(op, ReasonStaleGeneration, "block %d: observation %d is from generation %d, current %d", i, st.ObservationID, r.gen, gen)
		case !r.replayable || !r.payload.Valid:
			return invalid(op, ReasonNotReplayable, "block %d: observation %d", i, st.ObservationID)
		case r.payload.Int64 != st.PayloadID || r.end != st.EndDigest:
			return invalid(op, ReasonAncestorMismatch, "block %d: observation %d changed", i, st.ObservationID)
		case marked[MarkerEndConflict+"\x00"+r.end]:
			return invalid(op, ReasonEndConflict, "block %d: end %.12s", i, r.end)
		case marked[MarkerStartPoison+"\x00"+r.start]:
			return invalid(op, ReasonStartPoisoned, "block %d: start %.12s", i, r.start)
		}
		// Another generation from the same start may still produce a
		// different output for this visible position; only the block's own
		// producing intent (still finishing its delivery) is allowed.
		n := 0
		for _, id := range intents[r.start] {
			if id != r.producer {
				n++
			}
		}
		if n > 0 {
			return invalid(op, ReasonCompetingIntent, "block %d: %d unresolved at start %.12s", i, n, r.start)
		}
	}
	return nil
}

// planRows reads the observations of a plan's blocks by id.
func (w *wtx) planRows(op string, plan []PlanBlock) (map[int64]blockRow, error) {
	ids := make([]int64, len(plan))
	for i, st := range plan {
		ids[i] = st.ObservationID
	}
	keys, err := jsonKeys(op, ids)
	if err != nil {
		return nil, err
	}
	rs, err := w.QueryContext(w.ctx, `
		SELECT observation_id, scope_id, generation, start_digest, end_digest, intent_id, replayable, payload_id
		FROM observations WHERE observation_id IN (SELECT value FROM json_each(?))`, keys)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	out := make(map[int64]blockRow, len(plan))
	for rs.Next() {
		var id int64
		var r blockRow
		if err := rs.Scan(&id, &r.scope, &r.gen, &r.start, &r.end, &r.producer, &r.replayable, &r.payload); err != nil {
			return nil, err
		}
		out[id] = r
	}
	return out, rs.Err()
}

// markersAt returns the markers of scopeID at the digests, keyed by kind
// and digest ("kind\x00digest").
func (w *wtx) markersAt(op, scopeID string, digests []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(digests) == 0 {
		return out, nil
	}
	keys, err := jsonKeys(op, digests)
	if err != nil {
		return nil, err
	}
	rs, err := w.QueryContext(w.ctx, `
		SELECT kind, digest FROM markers WHERE scope_id = ? AND digest IN (SELECT value FROM json_each(?))`, scopeID, keys)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var kind, digest string
		if err := rs.Scan(&kind, &digest); err != nil {
			return nil, err
		}
		out[kind+"\x00"+digest] = true
	}
	return out, rs.Err()
}

// intentsAt returns the unresolved intents of scopeID by start digest.
func (w *wtx) intentsAt(op, scopeID string, starts []string) (map[string][]int64, error) {
	out := map[string][]int64{}
	if len(starts) == 0 {
		return out, nil
	}
	keys, err := jsonKeys(op, starts)
	if err != nil {
		return nil, err
	}
	rs, err := w.QueryContext(w.ctx, `
		SELECT intent_id, start_digest FROM intents WHERE scope_id = ? AND start_digest IN (SELECT value FROM json_each(?))`, scopeID, keys)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	for rs.Next() {
		var id int64
		var start string
		if err := rs.Scan(&id, &start); err != nil {
			return nil, err
		}
		out[start] = append(out[start], id)
	}
	return out, rs.Err()
}
