package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// TouchIntent records that an unresolved intent's generation made
// progress: its deadline metadata becomes deadline and its updated_at
// now. The deadline is diagnostic; the engine enforces inactivity with a
// monotonic timer and calls this at most once per a few seconds. Touching
// an intent that no longer exists fails with reason intent_missing.
func (s *Store) TouchIntent(ctx context.Context, intentID int64, deadline time.Time) error {
	const op = "touch_intent"
	return s.submit(ctx, op, false, func(w *wtx) error {
		return w.execIntent(op, intentID, `UPDATE intents SET deadline_at = ?, updated_at = ? WHERE intent_id = ?`,
			unixMs(deadline), w.nowMs())
	})
}

// ExpireOrphanIntents poisons and removes, as PoisonIntent does, every
// intent not updated since before, except the live ones (intents a
// running session still watches with its own monotonic timer, so that a
// wall-clock jump cannot expire a healthy generation). It returns how many
// it removed.
func (s *Store) ExpireOrphanIntents(ctx context.Context, before time.Time, reason string, live []int64) (int, error) {
	const op = "expire_orphan_intents"
	if reason == "" || len(reason) > 64 {
		return 0, invalid(op, ReasonInvalidArgument, "reason code must be 1 to 64 bytes")
	}
	if live == nil {
		live = []int64{}
	}
	keep, err := json.Marshal(live)
	if err != nil {
		return 0, fmt.Errorf("ledger: %s: %w", op, err)
	}
	const where = `updated_at < ? AND intent_id NOT IN (SELECT value FROM json_each(?))`
	var n int
	err = s.submit(ctx, op, false, func(w *wtx) error {
		if err := w.QueryRowContext(w.ctx, `SELECT count(*) FROM intents WHERE `+where, before.UnixMilli(), string(keep)).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		return w.poisonIntents(where, reason, before.UnixMilli(), string(keep))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
