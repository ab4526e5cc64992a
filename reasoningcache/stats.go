package reasoningcache

import (
	"strings"
	"sync/atomic"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// Counters are the engine's runtime counters: plain atomics, bumped on the
// request path at the cost of one atomic add each. Several engines may
// share one Counters (Config.Counters), so that the figures of a process
// survive configuration reloads. The zero value is ready to use.
type Counters struct {
	requests         atomic.Int64
	fullCache        atomic.Int64
	replayPlans      atomic.Int64
	replayedBlocks   atomic.Int64
	replaySuccesses  atomic.Int64
	replayRejections atomic.Int64
	replayResends    atomic.Int64
	capacity         atomic.Int64
	replayCapacity   atomic.Int64
	conflicts        atomic.Int64
	observations     atomic.Int64
	payloads         atomic.Int64
	payloadBytes     atomic.Int64
	bypass           [len(BypassReasons)]atomic.Int64
	poison           [len(PoisonReasons)]atomic.Int64
}

// BypassReasons are the fixed reasons for which a request the cache saw
// was relayed without the full cache (see Session.Skip): "disabled" (the
// store is disabled), "refused" (a canonical identity limit or an
// unidentifiable history), "invalid_spans", "model_too_long",
// "capacity" (no session under the memory budget or max_concurrent),
// "start_poisoned" (its position is poisoned), "dispatch_failed" (the
// intent could not be written) and "other".
var BypassReasons = [...]string{
	"disabled", "refused", "invalid_spans", "model_too_long", "capacity",
	"start_poisoned", "dispatch_failed", "other",
}

// PoisonReasons are the fixed reasons for which the engine poisons a
// position (nothing is replayed from it again): "capacity" (a request
// relayed without a session), "dispatch_failed" (its intent could not be
// written), "interrupted" (the response broke off or was not delivered),
// "unrecordable" (a finished response the cache could not verify or
// predict) and "expired" (a generation inactive past generation_timeout).
var PoisonReasons = [...]string{"capacity", "dispatch_failed", "interrupted", "unrecordable", "expired"}

// poisoned counts n poisons for one of PoisonReasons.
func (c *Counters) poisoned(reason string, n int64) {
	for i, r := range PoisonReasons {
		if r == reason {
			c.poison[i].Add(n)
			return
		}
	}
	c.poison[len(PoisonReasons)-2].Add(n) // an unknown code is an unrecordable outcome
}

// bypassIndex maps a skip code to its index in BypassReasons.
func bypassIndex(skip string) int {
	if strings.HasPrefix(skip, "refused_") {
		skip = "refused"
	}
	for i, r := range BypassReasons {
		if r == skip {
			return i
		}
	}
	return len(BypassReasons) - 1
}

// CounterValues is a copy of Counters at one moment. The JSON names are
// an interface: scripts read them from the admin API's status reply.
type CounterValues struct {
	// Requests is how many requests reached the cache (Prepare calls).
	Requests int64 `json:"requests"`
	// FullCache is how many of them were planned, dispatched and recorded
	// with the full cache (the rest are counted in Bypasses).
	FullCache int64 `json:"full_cache"`
	// ReplayPlans is how many requests went upstream carrying at least one
	// replayed block.
	ReplayPlans int64 `json:"replay_plans"`
	// ReplayedBlocks is how many earlier assistant turns were dispatched
	// as their original output blocks, summed over requests. A dispatched
	// block is not yet an upstream acceptance: see ReplaySuccesses.
	ReplayedBlocks int64 `json:"replayed_blocks"`
	// ReplaySuccesses is how many requests carrying replayed blocks the
	// upstream answered with a complete response.
	ReplaySuccesses int64 `json:"replay_successes"`
	// ReplayRejections is how many times the upstream rejected replayed
	// reasoning (400 invalid_encrypted_content or 404 item not found).
	ReplayRejections int64 `json:"replay_rejections"`
	// ReplayResends is how many of those requests were resent without
	// replay (replay_retry).
	ReplayResends int64 `json:"replay_resends"`
	// CapacityFallbacks counts requests that got no session under the
	// memory budget or max_concurrent (relayed without replay, their
	// position poisoned) plus requests whose replay did not fit the budget
	// (dispatched without replay).
	CapacityFallbacks int64 `json:"capacity_fallbacks"`
	// Poisons is how many positions the engine poisoned (start-poison
	// markers written or asked for), and PoisonsByReason the same by the
	// reasons in PoisonReasons (every reason is present).
	Poisons         int64            `json:"poisons"`
	PoisonsByReason map[string]int64 `json:"poisons_by_reason"`
	// Conflicts is how many end-conflict outcomes were recorded: a turn
	// produced twice with different originals, or replayed reasoning the
	// upstream rejected.
	Conflicts int64 `json:"conflicts"`
	// Observations is how many completed responses were committed as
	// observations (new or repeated).
	Observations int64 `json:"observations"`
	// Payloads is how many of them stored a replayable original output.
	Payloads int64 `json:"payloads"`
	// PayloadBytes is the size of the original outputs in Payloads.
	PayloadBytes int64 `json:"payload_bytes"`
	// Bypasses counts requests relayed without the full cache, by the
	// reasons in BypassReasons (every reason is present).
	Bypasses map[string]int64 `json:"bypasses"`
}

// Values returns the current counter values.
func (c *Counters) Values() CounterValues {
	v := CounterValues{
		Requests:          c.requests.Load(),
		FullCache:         c.fullCache.Load(),
		ReplayPlans:       c.replayPlans.Load(),
		ReplayedBlocks:    c.replayedBlocks.Load(),
		ReplaySuccesses:   c.replaySuccesses.Load(),
		ReplayRejections:  c.replayRejections.Load(),
		ReplayResends:     c.replayResends.Load(),
		CapacityFallbacks: c.capacity.Load() + c.replayCapacity.Load(),
		Conflicts:         c.conflicts.Load(),
		Observations:      c.observations.Load(),
		Payloads:          c.payloads.Load(),
		PayloadBytes:      c.payloadBytes.Load(),
		Bypasses:          make(map[string]int64, len(BypassReasons)),
		PoisonsByReason:   make(map[string]int64, len(PoisonReasons)),
	}
	for i, r := range BypassReasons {
		v.Bypasses[r] = c.bypass[i].Load()
	}
	for i, r := range PoisonReasons {
		n := c.poison[i].Load()
		v.PoisonsByReason[r] = n
		v.Poisons += n
	}
	return v
}

// Counters returns the engine's counters.
func (e *Engine) Counters() *Counters { return e.counters }

// prepared counts one Prepare call by what it decided.
func (c *Counters) prepared(s *Session, err error) {
	c.requests.Add(1)
	if err != nil || s == nil {
		c.bypass[bypassIndex("dispatch_failed")].Add(1)
		return
	}
	if s.skip != "" {
		c.bypass[bypassIndex(s.skip)].Add(1)
		if s.skip == "capacity" {
			c.capacity.Add(1)
		}
		return
	}
	c.fullCache.Add(1)
	if s.replayed > 0 {
		c.replayPlans.Add(1)
		c.replayedBlocks.Add(int64(s.replayed))
	}
}

// committed counts what CommitObservation did for a session.
func (c *Counters) committed(res ledger.CommitResult, payloadBytes int) {
	switch res.Outcome {
	case ledger.OutcomeStored, ledger.OutcomeRepeat:
		c.observations.Add(1)
		if res.Outcome == ledger.OutcomeStored && payloadBytes > 0 {
			c.payloads.Add(1)
			c.payloadBytes.Add(int64(payloadBytes))
		}
	case ledger.OutcomeEndConflict, ledger.OutcomeConflicted:
		c.conflicts.Add(1)
	}
}

// Rejected records that the upstream rejected the reasoning this session
// replayed. The handler calls it whether or not it resends the request.
func (s *Session) Rejected() {
	if s != nil && s.e != nil {
		s.e.counters.replayRejections.Add(1)
	}
}
