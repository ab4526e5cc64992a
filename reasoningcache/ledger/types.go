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
	Generation     int64
	LatestSnapshot int64
	RowVersion     int64
}

// PlanStep is one earlier observation a plan replays. Plans are stored as
// JSON arrays of steps.
type PlanStep struct {
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
	ID          int64
	ScopeID     string
	Generation  int64
	StartDigest string
	EndDigest   string
	EnvelopeFP  string // fingerprint of the predicted assistant envelope
	PayloadFP   string // fingerprint of the original output
	OutputHash  string // exact hash of the output as sent to the client
	PriorPlan   []PlanStep
	IntentID    int64 // producing intent (kept after the intent is gone)
	Snapshot    int64
	// ModelSnapshot is the model snapshot the upstream reported for the
	// output (e.g. "gpt-5.2-2025-12-11"); "" for rows from before it was
	// recorded.
	ModelSnapshot string
	Replayable    bool
	PayloadID     int64 // 0 when no payload was admitted
	CreatedAt     time.Time
	RowVersion    int64
}

// Payload is an admitted original output.
type Payload struct {
	ID          int64
	Fingerprint string
	// Output is the original output JSON exactly as received.
	Output     json.RawMessage
	Size       int64
	TouchedAt  time.Time
	RowVersion int64
}

// Marker is a start-poison or end-conflict row.
type Marker struct {
	ScopeID  string
	Kind     string // MarkerStartPoison or MarkerEndConflict
	Digest   string
	Reason   string // fixed reason code
	IntentID int64  // producing intent, 0 if none
}

// Intent is an unresolved dispatch or delivery.
type Intent struct {
	ID            int64
	ScopeID       string
	Generation    int64
	Phase         string
	StartDigest   string
	StartPosition int64
	EndDigest     string // set when moved to delivery
	Plan          []PlanStep
	Deadline      time.Time
	CreatedAt     time.Time
}

// SnapshotSeen is one model snapshot a scope has observed.
type SnapshotSeen struct {
	Snapshot string
	// LastSeen is when an observation last reported it.
	LastSeen time.Time
	// Seq orders the snapshots of one scope: the highest was seen last.
	Seq int64
}
