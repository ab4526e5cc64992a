package ledger

import (
	"context"
	"fmt"
	"time"
)

// CleanupLimit is the most payloads one cleanup run deletes.
const CleanupLimit = 100

// CleanupResult says what one cleanup run did.
type CleanupResult struct {
	// Deleted is how many payloads were deleted.
	Deleted int
	// Blocked is true when the restart barrier kept the run from deleting
	// anything.
	Blocked bool
	// At is the wall time the run used.
	At time.Time
}

// eligiblePayloads selects payloads cleanup may delete: untouched since
// before the cutoff, and reclaimable:
//   - no unresolved intent's plan names the payload (a plan about to be
//     replayed: the intent row is its pin; a block's payload is the one
//     its observation linked when the intent was created, and only
//     cleanup ever unlinks it),
//   - no unresolved intent starts at such an observation's position (a
//     competitor that may repeat it and link the payload again),
//   - no observation descending from such an observation still has a
//     payload (a retained descendant: its replay needs this ancestor).
//
// The last rule makes cleanup delete descendants before ancestors.
const eligiblePayloads = `
	SELECT p.payload_id FROM payloads p
	WHERE p.touched_at < ?
	AND NOT EXISTS (
		SELECT 1 FROM intents i, json_each(i.plan) AS j
		WHERE i.plan_count > 0 AND j.value ->> 'payload_id' = p.payload_id)
	AND NOT EXISTS (
		SELECT 1 FROM observations o JOIN intents i ON i.scope_id = o.scope_id AND i.start_digest = o.start_digest
		WHERE o.payload_id = p.payload_id)
	AND NOT EXISTS (
		SELECT 1 FROM observations o
		JOIN dependencies d ON d.ancestor_id = o.observation_id AND d.kind = 'ancestry'
		JOIN observations c ON c.observation_id = d.observation_id
		WHERE o.payload_id = p.payload_id AND c.payload_id IS NOT NULL AND c.payload_id != p.payload_id)
	ORDER BY p.touched_at, p.payload_id
	LIMIT ?`

// Cleanup deletes at most CleanupLimit payloads that have gone untouched
// for Options.Retention, descendants before ancestors, through the
// group-commit writer. Nothing is deleted while the restart barrier holds
// (see BarrierWindow). Observations and markers are kept forever: an
// observation whose payload is deleted stays, unreplayable, so that its
// position can never look unambiguous again. The app runs it hourly, off
// the request path.
func (s *Store) Cleanup(ctx context.Context) (CleanupResult, error) {
	wall, passed := s.barrier.sample()
	res := CleanupResult{At: wall, Blocked: !passed}
	if !passed {
		s.life.noteCleanup(res)
		return res, nil
	}
	// a use may have left touched_at up to TouchGranularity behind
	cutoff := wall.Add(-s.opts.Retention - TouchGranularity).UnixMilli()
	var deleted []int64
	err := s.submit(ctx, "cleanup", false, func(w *wtx) error {
		deleted = deleted[:0]
		for len(deleted) < CleanupLimit {
			ids, err := w.int64s(eligiblePayloads, cutoff, CleanupLimit-len(deleted))
			if err != nil {
				return fmt.Errorf("select eligible payloads: %w", err)
			}
			if len(ids) == 0 {
				break
			}
			keys, err := jsonKeys("cleanup", ids)
			if err != nil {
				return err
			}
			if _, err := w.ExecContext(w.ctx, `
				UPDATE observations SET payload_id = NULL, replayable = 0, row_version = row_version + 1
				WHERE payload_id IN (SELECT value FROM json_each(?))`, keys); err != nil {
				return fmt.Errorf("unlink payloads: %w", err)
			}
			if _, err := w.ExecContext(w.ctx, `DELETE FROM payloads WHERE payload_id IN (SELECT value FROM json_each(?))`, keys); err != nil {
				return fmt.Errorf("delete payloads: %w", err)
			}
			deleted = append(deleted, ids...)
		}
		ids := append([]int64(nil), deleted...)
		w.onCommit = append(w.onCommit, func() { s.cache.drop(ids...); s.memo.reset() })
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Deleted = len(deleted)
	s.life.noteCleanup(res)
	return res, nil
}

// int64s runs a query returning one integer column.
func (w *wtx) int64s(query string, args ...any) ([]int64, error) {
	rows, err := w.QueryContext(w.ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var v int64
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
