package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"time"
)

// PlanState is what a plan needs of a scope that changes from turn to
// turn, read with one statement: the scope's generation, the candidates
// at the newest turn's end, the markers and unresolved intents at the
// history's turns and the model snapshots it has seen.
type PlanState struct {
	// Known is false when the scope has no row (nothing else is read).
	Known bool
	// Generation is the scope's current generation.
	Generation int64
	// Candidates are the ids of the current generation's observations at
	// the end digest, newest first, as Candidates orders them.
	Candidates []int64
	// Markers are the markers at the given digests (Kind and Digest set).
	Markers []Marker
	// Intents are the unresolved intents starting at the given start
	// digests (ID and StartDigest set), oldest first.
	Intents []Intent
	// Snapshots are ModelSnapshots' answer.
	Snapshots []ModelSnapshotSeen
}

// planStateQuery is one statement for PlanState: each part tags its rows
// with a kind (0 scope, 1 candidate, 2 marker, 3 intent, 4 snapshot) and
// pads them to the same three values. Each part uses the index of the
// read it replaces (TestPlanReadsUseTheirKeys); the candidates come from
// the index alone. Unresolved intents are few (each is a request in
// flight, resolved ones are deleted), so all of the scope's are read
// and filtered here rather than matched against a key list.
const planStateQuery = `
	SELECT 0, generation, NULL, NULL FROM scopes WHERE scope_id = ?1
	UNION ALL
	SELECT * FROM (
		SELECT 1, o.observation_id, NULL, NULL
		FROM observations o JOIN scopes sc ON sc.scope_id = o.scope_id AND sc.generation = o.generation
		WHERE o.scope_id = ?1 AND o.end_digest = ?2
		ORDER BY o.observation_id DESC LIMIT ?3)
	UNION ALL
	SELECT 2, kind, digest, NULL FROM markers WHERE scope_id = ?1 AND digest IN (SELECT value FROM json_each(?4))
	UNION ALL
	SELECT 3, intent_id, start_digest, NULL FROM intents WHERE scope_id = ?1
	UNION ALL
	SELECT * FROM (
		SELECT 4, snapshot, last_seen_at, last_seq FROM scope_snapshots WHERE scope_id = ?1
		ORDER BY last_seq DESC LIMIT ?5)`

// PlanState reads the per-turn state of a plan in one statement (one
// read transaction): the answers ScopeState, Candidates (the ids of the
// first limit; PlanCandidate reads each with its plan and applies
// Candidates' size limits), MarkersAt(digests), IntentsAt(starts) and
// ModelSnapshots would give.
func (s *Store) PlanState(ctx context.Context, scopeID, endDigest string, digests, starts []string, limit int) (PlanState, error) {
	var st PlanState
	if s.isClosed() {
		return st, ErrClosed
	}
	dk, err := jsonKeys("plan_state", nonNil(digests))
	if err != nil {
		return st, err
	}
	rows, err := s.reads.QueryContext(ctx, planStateQuery, scopeID, endDigest, min(limit, s.opts.MaxCandidates), dk, maxSnapshots)
	if err != nil {
		return st, fmt.Errorf("ledger: plan state: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			kind    int
			a, b, c any
		)
		if err := rows.Scan(&kind, &a, &b, &c); err != nil {
			return st, fmt.Errorf("ledger: plan state: %w", err)
		}
		switch kind {
		case 0:
			st.Known, st.Generation = true, asInt(a)
		case 1:
			st.Candidates = append(st.Candidates, asInt(a))
		case 2:
			st.Markers = append(st.Markers, Marker{ScopeID: scopeID, Kind: asString(a), Digest: asString(b)})
		case 3:
			if in := (Intent{ID: asInt(a), ScopeID: scopeID, StartDigest: asString(b)}); slices.Contains(starts, in.StartDigest) {
				st.Intents = append(st.Intents, in)
			}
		case 4:
			st.Snapshots = append(st.Snapshots, ModelSnapshotSeen{Snapshot: asString(a), LastSeen: time.UnixMilli(asInt(b)), Seq: asInt(c)})
		}
	}
	if err := rows.Err(); err != nil {
		return st, fmt.Errorf("ledger: plan state: %w", err)
	}
	if !st.Known {
		return PlanState{}, nil
	}
	slices.SortFunc(st.Intents, func(x, y Intent) int { return cmp.Compare(x.ID, y.ID) })
	return st, nil
}

func nonNil(keys []string) []string {
	if keys == nil {
		return []string{}
	}
	return keys
}

func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

func asString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case []byte:
		return string(v)
	}
	return ""
}

// memoColumns are the columns scanMemo reads: an observation, its plan
// and its payload's metadata (NULL when it has none).
const memoColumns = `
	o.observation_id, o.scope_id, o.generation, o.start_digest, o.end_digest, o.envelope_fp, o.payload_fp,
	o.output_hash, o.intent_id, o.snapshot, o.replayable, o.payload_id, o.created_at, o.row_version,
	o.model_snapshot, o.plan_count, length(o.prior_plan), CASE WHEN length(o.prior_plan) <= ?1 THEN o.prior_plan END,
	o.parent_id, p.payload_id, p.fingerprint, p.size, length(CAST(p.output AS BLOB)), p.row_version`

// memoByID reads observations by id (primary key, see observationsByID).
const memoByID = `SELECT ` + memoColumns + `
	FROM observations o LEFT JOIN payloads p ON p.payload_id = o.payload_id
	WHERE o.observation_id IN (SELECT value FROM json_each(?2))`

// memoChain reads an observation and the linked plan above it, as
// walkPlan walks it.
const memoChain = `
	WITH RECURSIVE up(id, depth) AS (
		SELECT ?2, 1
		UNION ALL
		SELECT o.parent_id, up.depth + 1 FROM observations o JOIN up ON o.observation_id = up.id
		WHERE o.prior_plan = '' AND o.plan_count > 0 AND o.parent_id IS NOT NULL AND up.depth <= ?3
	)
	SELECT ` + memoColumns + `
	FROM up JOIN observations o ON o.observation_id = up.id LEFT JOIN payloads p ON p.payload_id = o.payload_id`

// loadMemo runs a memo query, puts its rows into the memo and returns
// them (also when the memo refuses them: they are still what the
// database held when the statement ran).
func (s *Store) loadMemo(ctx context.Context, query string, args ...any) ([]memoObs, []payloadMeta, error) {
	epoch := s.memo.begin()
	rows, err := s.reads.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: plan observations: %w", err)
	}
	defer rows.Close()
	var (
		obs  []memoObs
		pays []payloadMeta
	)
	for rows.Next() {
		var (
			e                    memoObs
			payload, parent, pid sql.NullInt64
			created              int64
			prior, fp            sql.NullString
			size, stored, ver    sql.NullInt64
		)
		if err := rows.Scan(&e.o.ID, &e.o.ScopeID, &e.o.Generation, &e.o.StartDigest, &e.o.EndDigest, &e.o.EnvelopeFP,
			&e.o.PayloadFP, &e.o.OutputHash, &e.o.IntentID, &e.o.Seq, &e.o.Replayable, &payload, &created,
			&e.o.RowVersion, &e.o.ModelSnapshot, &e.planCount, &e.planBytes, &prior, &parent,
			&pid, &fp, &size, &stored, &ver); err != nil {
			return nil, nil, fmt.Errorf("ledger: plan observations: %w", err)
		}
		e.o.PayloadID = payload.Int64
		e.o.CreatedAt = time.UnixMilli(created)
		e.prior, e.tooLarge = prior.String, !prior.Valid
		e.parent = parent.Int64
		obs = append(obs, e)
		if pid.Valid {
			pays = append(pays, payloadMeta{p: Payload{ID: pid.Int64, Fingerprint: fp.String, Size: size.Int64,
				RowVersion: ver.Int64}, stored: stored.Int64})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("ledger: plan observations: %w", err)
	}
	s.memo.put(epoch, obs, pays)
	return obs, pays, nil
}

// memoObservations returns the memo entries of ids (unknown ids left
// out), reading the missing ones with one statement.
func (s *Store) memoObservations(ctx context.Context, ids []int64) (map[int64]memoObs, error) {
	out := make(map[int64]memoObs, len(ids))
	var missing []int64
	for _, id := range ids {
		if e, ok := s.memo.observation(id); ok {
			out[id] = e
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return out, nil
	}
	keys, err := jsonKeys("plan_observations", missing)
	if err != nil {
		return nil, err
	}
	got, _, err := s.loadMemo(ctx, memoByID, s.opts.MaxPlanBytes, keys)
	if err != nil {
		return nil, err
	}
	for _, e := range got {
		out[e.o.ID] = e
	}
	return out, nil
}

// PlanObservations returns what Observations returns, through the plan
// memo: the rows of scopeID with the given ids, in id order, PriorPlan
// nil.
func (s *Store) PlanObservations(ctx context.Context, scopeID string, ids []int64) ([]Observation, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	if len(ids) == 0 {
		return nil, nil
	}
	got, err := s.memoObservations(ctx, ids)
	if err != nil {
		return nil, err
	}
	var out []Observation
	for _, e := range got {
		if e.o.ScopeID == scopeID {
			out = append(out, e.o)
		}
	}
	slices.SortFunc(out, func(a, b Observation) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

// PlanCandidate returns observation id with its recorded plan, exactly
// as Candidates returns it (ErrTooLarge under the same limits), through
// the plan memo: a linked plan is walked up its parents in memory, and
// only the rows the memo lacks are read, with one statement.
func (s *Store) PlanCandidate(ctx context.Context, id int64) (Observation, error) {
	if s.isClosed() {
		return Observation{}, ErrClosed
	}
	first, plan, err := s.planCandidate(ctx, id)
	if err != nil {
		return Observation{}, err
	}
	o := first.o
	o.PriorPlan = plan
	return o, nil
}

func (s *Store) planCandidate(ctx context.Context, id int64) (memoObs, []PlanBlock, error) {
	var none memoObs
	local := map[int64]memoObs{}
	lookup := func(id int64) (memoObs, bool, error) {
		if e, ok := local[id]; ok {
			return e, true, nil
		}
		if e, ok := s.memo.observation(id); ok {
			return e, true, nil
		}
		rows, _, err := s.loadMemo(ctx, memoChain, s.opts.MaxPlanBytes, id, s.opts.MaxPlanBlocks+1)
		if err != nil {
			return memoObs{}, false, err
		}
		for _, e := range rows {
			local[e.o.ID] = e
		}
		e, ok := local[id]
		return e, ok, nil
	}
	first, ok, err := lookup(id)
	if err != nil {
		return none, nil, err
	}
	if !ok {
		return none, nil, fmt.Errorf("%w: observation %d", ErrNotFound, id)
	}
	if first.planBytes > int64(s.opts.MaxPlanBytes) || first.planCount > int64(s.opts.MaxPlanBlocks) {
		return none, nil, fmt.Errorf("%w: observation %d has a plan of %d blocks, %d bytes", ErrTooLarge, id, first.planCount, first.planBytes)
	}
	if !first.linked() {
		plan, err := s.decodePlan(first.prior, first.planCount)
		if err != nil {
			return none, nil, fmt.Errorf("observation %d: %w", id, err)
		}
		return first, plan, nil
	}
	// The rows walkPlan reads: the observation, then parents while the
	// row before is linked, to the same depth.
	chain := []memoObs{first}
	for depth := 1; depth <= s.opts.MaxPlanBlocks+1; depth++ {
		last := chain[len(chain)-1]
		if !last.linked() || last.parent == 0 {
			break
		}
		p, ok, err := lookup(last.parent)
		if err != nil {
			return none, nil, err
		}
		if !ok {
			break
		}
		chain = append(chain, p)
	}
	// priorPlan's reading of those rows.
	var rev, base []PlanBlock
	for i, r := range chain {
		if i > 0 {
			rev = append(rev, PlanBlock{ObservationID: r.o.ID, PayloadID: r.o.PayloadID, EndDigest: r.o.EndDigest})
		}
		if r.linked() {
			continue
		}
		if r.planBytes > int64(s.opts.MaxPlanBytes) {
			return none, nil, fmt.Errorf("%w: observation %d plan of %d bytes", ErrTooLarge, r.o.ID, r.planBytes)
		}
		if r.planCount > 0 || r.prior != linkedPlan {
			if base, err = s.decodePlan(r.prior, r.planCount); err != nil {
				return none, nil, fmt.Errorf("observation %d: %w", r.o.ID, err)
			}
		}
		break
	}
	plan := make([]PlanBlock, 0, len(base)+len(rev))
	plan = append(plan, base...)
	for i := len(rev) - 1; i >= 0; i-- {
		plan = append(plan, rev[i])
	}
	if int64(len(plan)) != first.planCount {
		return none, nil, fmt.Errorf("ledger: observation %d: linked plan has %d blocks, row says %d", id, len(plan), first.planCount)
	}
	return first, plan, nil
}

// linked reports whether the row's plan is linked to its parent (an
// empty prior_plan with blocks), as walkPlan decides.
func (e memoObs) linked() bool { return !e.tooLarge && e.prior == linkedPlan && e.planCount > 0 }

// PlanPayloads returns what Payloads returns, through the plan memo,
// except that TouchedAt is not read (zero): the planner does not use it.
func (s *Store) PlanPayloads(ctx context.Context, ids []int64) (*PayloadSet, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	set := &PayloadSet{s: s, metas: make(map[int64]payloadMeta, len(ids))}
	var missing []int64
	for _, id := range ids {
		if m, ok := s.memo.payload(id); ok {
			set.metas[id] = m
		} else {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return set, nil
	}
	epoch := s.memo.begin()
	read, err := s.Payloads(ctx, missing)
	if err != nil {
		return nil, err
	}
	pays := make([]payloadMeta, 0, len(read.metas))
	for id, m := range read.metas {
		m.p.TouchedAt = time.Time{}
		set.metas[id] = m
		pays = append(pays, m)
	}
	s.memo.put(epoch, nil, pays)
	return set, nil
}
