package ledger

import (
	"encoding/json"
	"time"
)

// Marker kinds. Markers are independent of scope generations: advancing a
// generation keeps them.
const (
	// MarkerStartPoison says that nothing may be replayed for a request
	// whose new assistant output starts at the marked digest: an earlier
	// request from that position has an unknown outcome.
	MarkerStartPoison = "start_poison"
	// MarkerEndConflict says that two different original outputs project to
	// the same visible history at the marked end digest, so neither can be
	// replayed for it.
	MarkerEndConflict = "end_conflict"
)

// Intent phases.
const (
	// PhaseDispatch: the upstream request may have been sent; its output is
	// not committed yet.
	PhaseDispatch = "dispatch"
	// PhaseDelivery: the output is committed; the response to the client is
	// being finished.
	PhaseDelivery = "delivery"
)

// Scope identifies one cache scope: everything that changes the model's
// context, reduced by the caller to an HMAC fingerprint.
type Scope struct {
	// ID is the scope fingerprint (64 lowercase hex characters).
	ID string
	// Model is the upstream model the scope targets.
	Model string
	// Caller is the caller fingerprint the scope targets (hex, may be empty).
	Caller string
}

// ScopeState is a scope's row.
type ScopeState struct {
	Scope
	// Generation is the scope's current generation; a fence raises it, and
	// observations of an older generation are never planned again.
	Generation int64
	// LatestSeq is the counter of the scope's last committed
	// observation (Observation.Seq), 0 before the first commit.
	LatestSeq int64
	// RowVersion is raised on every update of the row.
	RowVersion int64
}

// PlanBlock is one earlier observation a plan replays. Plans are stored as
// JSON arrays of blocks.
type PlanBlock struct {
	// ObservationID is the observation whose original output is replayed.
	ObservationID int64 `json:"observation_id"`
	// PayloadID is the payload the observation pointed at when planned.
	PayloadID int64 `json:"payload_id"`
	// EndDigest is the observation's end digest when planned.
	EndDigest string `json:"end_digest"`
}

// Observation is one committed assistant turn: which visible history it
// started from and ended at, what was sent to produce it and where its
// original output is.
type Observation struct {
	// ID is the observation's row id.
	ID int64
	// ScopeID is the scope the observation belongs to.
	ScopeID string
	// Generation is the scope generation the observation was committed in.
	Generation int64
	// StartDigest is the prefix digest of the visible history the request
	// started from.
	StartDigest string
	// EndDigest is the prefix digest of the visible history once the output
	// is appended.
	EndDigest string
	// EnvelopeFP is the fingerprint of the predicted assistant envelope.
	EnvelopeFP string
	// PayloadFP is the fingerprint of the original output.
	PayloadFP string
	// OutputHash is the exact hash of the output as sent to the client.
	OutputHash string
	// PriorPlan is the plan the producing request replayed.
	PriorPlan []PlanBlock
	// IntentID is the producing intent (kept after the intent is gone).
	IntentID int64
	// Seq is the scope's commit counter at this commit
	// (ScopeState.LatestSeq just after it), not a model snapshot.
	Seq int64
	// ModelSnapshot is the model snapshot the upstream reported for the
	// output (e.g. "gpt-5.2-2025-12-11"); "" for rows from before it was
	// recorded.
	ModelSnapshot string
	// Replayable reports whether the original output may be replayed;
	// cleanup clears it when it deletes the payload.
	Replayable bool
	// PayloadID is the admitted original output, 0 when none was admitted
	// or it has been evicted.
	PayloadID int64
	// CreatedAt is when the observation was committed.
	CreatedAt time.Time
	// RowVersion is raised on every update of the row.
	RowVersion int64
}

// Payload is an admitted original output.
type Payload struct {
	// ID is the payload's row id.
	ID int64
	// Fingerprint identifies the output (Observation.PayloadFP); equal
	// outputs share one payload.
	Fingerprint string
	// Output is the original output JSON exactly as received.
	Output json.RawMessage
	// Size is len(Output) in bytes.
	Size int64
	// TouchedAt is when the payload was last admitted or used; cleanup
	// deletes payloads untouched since before its cutoff, oldest first.
	TouchedAt time.Time
	// RowVersion is raised on every update of the row.
	RowVersion int64
}

// Marker is a start-poison or end-conflict row.
type Marker struct {
	// ScopeID is the scope the marker belongs to.
	ScopeID string
	// Kind is MarkerStartPoison or MarkerEndConflict.
	Kind string
	// Digest is the prefix digest the marker applies to.
	Digest string
	// Reason is a fixed reason code.
	Reason string
	// IntentID is the producing intent, 0 if none.
	IntentID int64
}

// Intent is an unresolved dispatch or delivery.
type Intent struct {
	// ID is the intent's row id.
	ID int64
	// ScopeID is the scope the intent belongs to.
	ScopeID string
	// Generation is the scope generation the intent was created in.
	Generation int64
	// Phase is PhaseDispatch or PhaseDelivery.
	Phase string
	// StartDigest is the prefix digest of the history the request starts
	// from.
	StartDigest string
	// StartPosition is the message index StartDigest covers.
	StartPosition int64
	// EndDigest is the end digest, set when the intent moves to delivery.
	EndDigest string
	// Plan is the replay plan the request was sent with.
	Plan []PlanBlock
	// Deadline is the deadline metadata TouchIntent last recorded; it is
	// diagnostic (the engine enforces inactivity with its own timer).
	Deadline time.Time
	// CreatedAt is when the intent was created.
	CreatedAt time.Time
}

// ModelSnapshotSeen is one model snapshot a scope has observed.
type ModelSnapshotSeen struct {
	// Snapshot is the model snapshot string the upstream reported.
	Snapshot string
	// LastSeen is when an observation last reported it.
	LastSeen time.Time
	// Seq orders the snapshots of one scope: the highest was seen last.
	Seq int64
}
