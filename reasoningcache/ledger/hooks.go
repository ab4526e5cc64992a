package ledger

// Named crash points. Tests set crashHook to kill the process at one of
// them; in production crashHook is nil and crashPoint costs one nil check.
const (
	crashBatchBegun        = "batch.begun" // after BEGIN, before the first savepoint
	crashBetweenSavepoints = "batch.between_savepoints"
	crashBeforeCommit      = "batch.before_commit" // every op applied, COMMIT not yet issued
	crashAfterCommit       = "batch.after_commit"  // committed, callers not yet answered
	crashRecovery          = "recovery.poisoned"   // markers written, intents not yet deleted
	crashMigration         = "migration.step"      // inside a migration transaction
)

// crashHook, when set (by tests only, before Open), is called at each
// named crash point.
var crashHook func(point string)

func crashPoint(point string) {
	if h := crashHook; h != nil {
		h(point)
	}
}
