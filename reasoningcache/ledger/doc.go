// Package ledger is the reasoning cache's crash-safe memory: a SQLite
// database (modernc.org/sqlite, pure Go) owned by exactly one process.
//
// What it has committed survives kill -9, restarts and configuration
// reloads, and nothing is acknowledged before it is committed:
//
//   - One process owns the database file. Ownership is an exclusive lock on
//     a sidecar lock file, proven by a write to the database at startup; a
//     second process fails fast with [ErrInUse].
//   - Every connection runs with WAL, foreign keys and synchronous=FULL, set
//     in the DSN so that the whole connection pool has them. SQLite's
//     automatic WAL checkpoint is disabled: the store's own maintenance
//     loop checkpoints in the background and keeps the WAL under
//     [Options.WALLimit], off the request path.
//   - The same loop runs retention: payloads untouched for
//     [Options.Retention] are deleted by an hourly [Store.Cleanup], never
//     within [BarrierWindow] of a start or of a detected clock step.
//   - Disk pressure stops payload admission ([Options.DiskAdmission]); a
//     safety write that fails for lack of room gets the reserve file and
//     one retry, and if that fails the store latches a guard file and
//     refuses per-request work ([ErrGuarded]) until an operator deletes it.
//     [Store.Lifecycle] reports all of this.
//   - The schema is versioned and migrated in one transaction per step.
//   - At startup every intent left unresolved by an earlier process becomes a
//     start-poison marker for its positions and is removed, in one
//     transaction, before [Open] returns.
//   - All writes go through one writer goroutine (group commit): concurrent
//     operations are applied in one SQLite transaction and one fsync, each in
//     its own SAVEPOINT, so each validates against the state left by the
//     operations before it and fails alone. A caller is answered only after
//     the batch's COMMIT returned.
//
// Digests and fingerprints are lowercase hexadecimal strings (SHA-256 or
// HMAC-SHA-256, 64 characters); plan descriptors are JSON. The package does
// not compute them: it stores, indexes and validates them.
package ledger
