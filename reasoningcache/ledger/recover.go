package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"os"
)

type recoveryResult struct {
	intents     int
	markers     int
	gapConsumed bool
}

// startup runs the one startup transaction: it proves ownership with a
// write to meta, turns every intent left by an earlier process into
// start-poison markers for its positions and removes it, and applies the
// coverage-gap rules: a disabled open records a gap; an enabled open
// consumes one by advancing every scope's generation (payloads and markers
// are kept). Nothing is served before it commits.
func (s *Store) startup(ctx context.Context, enabled bool) (rec recoveryResult, err error) {
	c := s.wconn
	if _, err := c.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return rec, fmt.Errorf("begin (is another program writing the database?): %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = c.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	now := s.opts.Now().UnixMilli()
	if _, err := c.ExecContext(ctx,
		`UPDATE meta SET owner_pid = ?, owner_since = ?, opened_count = opened_count + 1`,
		os.Getpid(), now); err != nil {
		return rec, fmt.Errorf("ownership write: %w", err)
	}
	var gap bool
	if err := c.QueryRowContext(ctx, `SELECT secret, coverage_gap FROM meta`).Scan(&s.secret, &gap); err != nil {
		return rec, fmt.Errorf("read meta: %w", err)
	}
	if len(s.secret) != 32 {
		return rec, fmt.Errorf("meta secret has %d bytes, want 32", len(s.secret))
	}

	// Every position of every unresolved intent: its start, and its end
	// once it reached delivery.
	res, err := c.ExecContext(ctx, `
		INSERT INTO markers (scope_id, kind, digest, reason, intent_id, created_at)
		SELECT scope_id, 'start_poison', start_digest, 'unresolved_at_startup', intent_id, ? FROM intents
		UNION ALL
		SELECT scope_id, 'start_poison', end_digest, 'unresolved_at_startup', intent_id, ? FROM intents
			WHERE end_digest != ''
		ON CONFLICT (scope_id, digest, kind) DO NOTHING`, now, now)
	if err != nil {
		return rec, fmt.Errorf("poison unresolved intents: %w", err)
	}
	n, _ := res.RowsAffected()
	rec.markers = int(n)
	crashPoint(crashRecovery)
	res, err = c.ExecContext(ctx, `DELETE FROM intents`)
	if err != nil {
		return rec, fmt.Errorf("remove unresolved intents: %w", err)
	}
	n, _ = res.RowsAffected()
	rec.intents = int(n)

	switch {
	case !enabled && !gap:
		if _, err := c.ExecContext(ctx, `UPDATE meta SET coverage_gap = 1`); err != nil {
			return rec, fmt.Errorf("record coverage gap: %w", err)
		}
	case enabled && gap:
		if err := consumeGap(ctx, c, now); err != nil {
			return rec, err
		}
		rec.gapConsumed = true
	}
	if _, err := c.ExecContext(ctx, "COMMIT"); err != nil {
		return rec, fmt.Errorf("commit: %w", err)
	}
	return rec, nil
}

// dbtx is what both *sql.Conn and *sql.Tx offer.
type dbtx interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// consumeGap advances every scope's generation and clears the coverage
// gap: what was recorded before the gap can no longer be trusted to be
// complete, so it stops being replayable; payloads and markers stay.
func consumeGap(ctx context.Context, c dbtx, now int64) error {
	if _, err := c.ExecContext(ctx,
		`UPDATE scopes SET generation = generation + 1, row_version = row_version + 1, updated_at = ?`, now); err != nil {
		return fmt.Errorf("advance generations: %w", err)
	}
	if _, err := c.ExecContext(ctx, `UPDATE meta SET coverage_gap = 0`); err != nil {
		return fmt.Errorf("clear coverage gap: %w", err)
	}
	return nil
}
