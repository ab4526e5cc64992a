package ledger

import (
	"errors"
	"fmt"
)

// Sentinel errors returned by the store. Test them with errors.Is.
var (
	// ErrInUse means another process (or another Store in this process)
	// owns the database file. Open returns an error that wraps it and says
	// which file and what to do.
	ErrInUse = errors.New("ledger: database is in use by another process")

	// ErrNoDatabase is returned by Open with Options.Disabled set when the
	// database file does not exist: a disabled cache creates nothing.
	ErrNoDatabase = errors.New("ledger: no database (cache disabled)")

	// ErrClosed is returned by every operation on a closed Store.
	ErrClosed = errors.New("ledger: store is closed")

	// ErrDisabled is returned by write operations while the store is
	// disabled: it keeps ownership of the file but does no per-request work.
	ErrDisabled = errors.New("ledger: cache is disabled")

	// ErrNotFound is returned when a row asked for by id does not exist.
	ErrNotFound = errors.New("ledger: not found")

	// ErrTooLarge is returned when a stored length, count or size exceeds
	// the configured limit; the JSON is never loaded in that case.
	ErrTooLarge = errors.New("ledger: stored value exceeds limit")

	// ErrNewerFormat is returned by Open when the database was written by a
	// newer version of this package.
	ErrNewerFormat = errors.New("ledger: database format is newer than this build")
)

// Reason is a fixed, loggable code saying why an operation's validation
// failed. Reasons never contain request data.
type Reason string

// Validation failure reasons.
const (
	ReasonStaleGeneration  Reason = "stale_generation"
	ReasonStartPoisoned    Reason = "start_poisoned"
	ReasonEndConflict      Reason = "end_conflict"
	ReasonCompetingIntent  Reason = "competing_intent"
	ReasonMissingAncestor  Reason = "missing_ancestor"
	ReasonAncestorMismatch Reason = "ancestor_mismatch"
	ReasonNotReplayable    Reason = "not_replayable"
	ReasonIntentMissing    Reason = "intent_missing"
	ReasonIntentPhase      Reason = "intent_phase"
	ReasonInvalidArgument  Reason = "invalid_argument"
)

// ValidationError is returned by a write operation whose validation failed
// against the state left by the operations committed before it. The
// operation changed nothing; the other operations of its batch are
// unaffected.
type ValidationError struct {
	Op     string // operation name, e.g. "create_intent"
	Reason Reason // why validation failed
	Detail string // loggable detail (ids, digests), never request content
}

// Error implements error.
func (e *ValidationError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("ledger: %s: %s", e.Op, e.Reason)
	}
	return fmt.Sprintf("ledger: %s: %s: %s", e.Op, e.Reason, e.Detail)
}

// IsReason reports whether err is a *ValidationError with the given reason.
func IsReason(err error, r Reason) bool {
	var ve *ValidationError
	return errors.As(err, &ve) && ve.Reason == r
}

func invalid(op string, r Reason, format string, args ...any) error {
	return &ValidationError{Op: op, Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// inUseError is Open's ErrInUse with the path and the remedy.
type inUseError struct{ path string }

func (e inUseError) Error() string {
	return fmt.Sprintf("%s is in use by another process; use `caddy reload` to change the running one's configuration", e.path)
}

func (e inUseError) Is(target error) bool { return target == ErrInUse }
