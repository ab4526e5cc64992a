package ledger

import (
	"context"
	"fmt"
)

// FenceFilter selects the scopes a fence covers.
type FenceFilter struct {
	// Model is the upstream model of the scopes; "" means every model.
	Model string
	// Caller is the caller fingerprint of the scopes when AnyCaller is
	// false.
	Caller string
	// AnyCaller fences the scopes of every caller.
	AnyCaller bool
}

// Fence protects existing records from traffic the cache could not observe
// (a direct Responses request, a request it could not identify): in one
// commit it poisons the positions of every unresolved intent of the
// matching scopes, as PoisonIntent does, and advances their generations,
// so no record from before the fence is replayed again and no output
// generated on the unobserved path can leave an older record falsely
// unique. reason is a fixed code of at most 64 bytes. It returns how many
// scopes it fenced.
func (s *Store) Fence(ctx context.Context, f FenceFilter, reason string) (int, error) {
	const op = "fence"
	if reason == "" || len(reason) > 64 {
		return 0, invalid(op, ReasonInvalidArgument, "reason code must be 1 to 64 bytes")
	}
	const match = `(? = '' OR model = ?) AND (? OR caller = ?)`
	args := []any{f.Model, f.Model, f.AnyCaller, f.Caller}
	var n int
	err := s.submit(ctx, op, false, func(w *wtx) error {
		now := w.nowMs()
		in := `scope_id IN (SELECT scope_id FROM scopes WHERE ` + match + `)`
		if err := w.poisonIntents(in, reason, args...); err != nil {
			return err
		}
		r, err := w.ExecContext(w.ctx, `UPDATE scopes SET generation = generation + 1, row_version = row_version + 1, updated_at = ?
			WHERE `+match, append([]any{now}, args...)...)
		if err != nil {
			return fmt.Errorf("advance generations: %w", err)
		}
		k, err := r.RowsAffected()
		n = int(k)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}
