package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
)

// migration is one schema step. Steps run in order, each in its own
// IMMEDIATE transaction together with the bump of PRAGMA user_version and
// meta.format_version, so a crash leaves the database at a step boundary.
type migration struct {
	name  string
	stmts []string
}

// migrations is the schema history. Append only: never edit a step that
// has shipped.
var migrations = []migration{
	{
		name: "initial schema",
		stmts: []string{
			`CREATE TABLE meta (
				id             INTEGER PRIMARY KEY CHECK (id = 1),
				format_version INTEGER NOT NULL,
				secret         BLOB    NOT NULL CHECK (length(secret) = 32),
				coverage_gap   INTEGER NOT NULL DEFAULT 0 CHECK (coverage_gap IN (0, 1)),
				owner_pid      INTEGER NOT NULL DEFAULT 0,
				owner_since    INTEGER NOT NULL DEFAULT 0,
				opened_count   INTEGER NOT NULL DEFAULT 0
			) STRICT`,
			`CREATE TABLE scopes (
				scope_id        TEXT    PRIMARY KEY CHECK (length(scope_id) = 64),
				generation      INTEGER NOT NULL DEFAULT 1,
				model           TEXT    NOT NULL,
				caller          TEXT    NOT NULL,
				latest_snapshot INTEGER NOT NULL DEFAULT 0,
				row_version     INTEGER NOT NULL DEFAULT 1,
				created_at      INTEGER NOT NULL,
				updated_at      INTEGER NOT NULL
			) STRICT`,
			`CREATE INDEX scopes_model_caller ON scopes (model, caller)`,
			`CREATE TABLE payloads (
				payload_id  INTEGER PRIMARY KEY,
				fingerprint TEXT    NOT NULL UNIQUE CHECK (length(fingerprint) = 64),
				output      TEXT    NOT NULL,
				size        INTEGER NOT NULL CHECK (size = length(CAST(output AS BLOB))),
				touched_at  INTEGER NOT NULL,
				row_version INTEGER NOT NULL DEFAULT 1
			) STRICT`,
			`CREATE INDEX payloads_touched ON payloads (touched_at)`,
			`CREATE TABLE observations (
				observation_id INTEGER PRIMARY KEY,
				scope_id       TEXT    NOT NULL REFERENCES scopes (scope_id) ON DELETE CASCADE,
				generation     INTEGER NOT NULL,
				start_digest   TEXT    NOT NULL CHECK (length(start_digest) = 64),
				end_digest     TEXT    NOT NULL CHECK (length(end_digest) = 64),
				envelope_fp    TEXT    NOT NULL,
				payload_fp     TEXT    NOT NULL,
				output_hash    TEXT    NOT NULL,
				prior_plan     TEXT    NOT NULL,
				plan_count     INTEGER NOT NULL,
				intent_id      INTEGER NOT NULL,
				snapshot       INTEGER NOT NULL,
				replayable     INTEGER NOT NULL CHECK (replayable IN (0, 1)),
				payload_id     INTEGER REFERENCES payloads (payload_id),
				created_at     INTEGER NOT NULL,
				row_version    INTEGER NOT NULL DEFAULT 1
			) STRICT`,
			`CREATE INDEX observations_end ON observations (scope_id, end_digest, generation)`,
			`CREATE INDEX observations_start ON observations (scope_id, start_digest)`,
			`CREATE INDEX observations_payload ON observations (payload_id)`,
			`CREATE TABLE markers (
				marker_id  INTEGER PRIMARY KEY,
				scope_id   TEXT    NOT NULL REFERENCES scopes (scope_id) ON DELETE CASCADE,
				kind       TEXT    NOT NULL CHECK (kind IN ('start_poison', 'end_conflict')),
				digest     TEXT    NOT NULL CHECK (length(digest) = 64),
				reason     TEXT    NOT NULL,
				intent_id  INTEGER NOT NULL DEFAULT 0,
				created_at INTEGER NOT NULL,
				UNIQUE (scope_id, digest, kind)
			) STRICT`,
			`CREATE TABLE intents (
				intent_id      INTEGER PRIMARY KEY AUTOINCREMENT,
				scope_id       TEXT    NOT NULL REFERENCES scopes (scope_id) ON DELETE CASCADE,
				generation     INTEGER NOT NULL,
				phase          TEXT    NOT NULL CHECK (phase IN ('dispatch', 'delivery')),
				start_digest   TEXT    NOT NULL CHECK (length(start_digest) = 64),
				start_position INTEGER NOT NULL,
				end_digest     TEXT    NOT NULL DEFAULT '',
				plan           TEXT    NOT NULL,
				plan_count     INTEGER NOT NULL,
				deadline_at    INTEGER NOT NULL,
				created_at     INTEGER NOT NULL,
				updated_at     INTEGER NOT NULL
			) STRICT`,
			`CREATE INDEX intents_start ON intents (scope_id, start_digest)`,
			// 'pin' rows are no longer written: an unresolved intent's own
			// plan is its pin (see eligiblePayloads); startup recovery
			// deletes every intent, and with it any pin row an older build
			// left.
			`CREATE TABLE dependencies (
				dependency_id  INTEGER PRIMARY KEY,
				kind           TEXT    NOT NULL CHECK (kind IN ('ancestry', 'pin')),
				observation_id INTEGER REFERENCES observations (observation_id) ON DELETE CASCADE,
				intent_id      INTEGER REFERENCES intents (intent_id) ON DELETE CASCADE,
				ancestor_id    INTEGER NOT NULL REFERENCES observations (observation_id),
				CHECK ((kind = 'ancestry') = (observation_id IS NOT NULL)),
				CHECK ((kind = 'pin') = (intent_id IS NOT NULL))
			) STRICT`,
			`CREATE INDEX dependencies_observation ON dependencies (observation_id)`,
			`CREATE INDEX dependencies_intent ON dependencies (intent_id)`,
			`CREATE INDEX dependencies_ancestor ON dependencies (ancestor_id)`,
		},
	},
	{
		// The planner accepts a replay only under a model snapshot the
		// scope still sees: each observation records the snapshot string
		// the upstream reported, and each scope when and in which order it
		// last saw each snapshot.
		name: "model snapshots",
		stmts: []string{
			`ALTER TABLE observations ADD COLUMN model_snapshot TEXT NOT NULL DEFAULT ''`,
			`CREATE TABLE scope_snapshots (
				scope_id     TEXT    NOT NULL REFERENCES scopes (scope_id) ON DELETE CASCADE,
				snapshot     TEXT    NOT NULL CHECK (length(snapshot) BETWEEN 1 AND 256),
				last_seen_at INTEGER NOT NULL,
				last_seq     INTEGER NOT NULL,
				PRIMARY KEY (scope_id, snapshot)
			) STRICT`,
			`CREATE INDEX intents_updated ON intents (updated_at)`,
		},
	},
	{
		// A plan that extends its last step's own plan is stored as a
		// link to that step (see ancestry.go), so that plans and ancestry
		// rows grow linearly with a conversation.
		name: "linked prior plans",
		stmts: []string{
			`ALTER TABLE observations ADD COLUMN parent_id INTEGER`,
		},
	},
}

// formatVersion is the schema version this build writes.
func formatVersion() int { return len(migrations) }

// migrate brings the database to formatVersion, one transaction per step.
func migrate(ctx context.Context, conn *sql.Conn) error {
	var have int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("read user_version: %w", err)
	}
	if have > formatVersion() {
		return fmt.Errorf("%w: database format %d, this build knows %d", ErrNewerFormat, have, formatVersion())
	}
	for v := have; v < formatVersion(); v++ {
		if err := migrateStep(ctx, conn, v); err != nil {
			return fmt.Errorf("migration %d (%s): %w", v+1, migrations[v].name, err)
		}
	}
	return nil
}

func migrateStep(ctx context.Context, conn *sql.Conn, v int) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	// Re-read under the write lock.
	var have int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return err
	}
	if have != v {
		return fmt.Errorf("user_version changed to %d during migration", have)
	}
	for i, stmt := range migrations[v].stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("statement %d: %w", i+1, err)
		}
		if i == 0 {
			crashPoint(crashMigration)
		}
	}
	if v == 0 {
		secret := make([]byte, 32)
		if _, err := rand.Read(secret); err != nil {
			return fmt.Errorf("generate secret: %w", err)
		}
		if _, err := conn.ExecContext(ctx, `INSERT INTO meta (id, format_version, secret) VALUES (1, 0, ?)`, secret); err != nil {
			return fmt.Errorf("insert meta: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, `UPDATE meta SET format_version = ?`, v+1); err != nil {
		return fmt.Errorf("update format_version: %w", err)
	}
	// PRAGMA takes no bound parameters; v+1 is an int.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return fmt.Errorf("set user_version: %w", err)
	}
	_, err = conn.ExecContext(ctx, "COMMIT")
	return err
}
