package reasoningcache

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// maxCandidates bounds the candidates one request verifies.
const maxCandidates = 4

// plan is a validated replay: blocks oldest first, the Input range the
// turn each block replaces translated to, and the block's original items.
type plan struct {
	gen    int64
	blocks []ledger.PlanBlock
	ranges [][2]int
	items  [][]json.RawMessage
	bytes  int64 // replayed payload bytes

	snapshots []string // model snapshot of each block's observation
	sizes     []int64  // payload bytes of each block
}

// prefix returns the plan's first n blocks.
func (p plan) prefix(n int) plan {
	if n == len(p.blocks) {
		return p
	}
	q := plan{gen: p.gen, blocks: p.blocks[:n], ranges: p.ranges[:n], items: p.items[:n],
		snapshots: p.snapshots[:n], sizes: p.sizes[:n]}
	for _, sz := range q.sizes {
		q.bytes += sz
	}
	return q
}

// apply returns req.Input with every planned turn replaced by its block.
func (p plan) apply(req *Request) []json.RawMessage {
	return replaceRanges(req.Input, p.ranges, p.items)
}

// plan proposes the recorded ancestry of the newest assistant turn of the
// history and keeps its longest valid prefix: the candidates at the
// turn's end digest are tried newest first. A prefix of a recorded
// ancestry is itself a recorded ancestry (the plan of its last block plus
// that block), so every block it replays had all its replayed descendants
// generated with it, and turns outside the plan are sent as the client
// sent them. The reason is a fixed code for the log ("" on a full plan).
func (e *Engine) plan(ctx context.Context, sc ledger.Scope, d *canonical.Digests, req *Request) (plan, string) {
	if len(d.Turns) == 0 {
		return plan{}, "no_block"
	}
	newest := d.Turns[len(d.Turns)-1]
	// Every block of a valid plan starts and ends where a turn of this
	// history does (checkBlock), so the markers and intents at the turns'
	// digests are all a plan can meet: one statement reads them with the
	// rest of the scope's per-turn state. The markers of a history with
	// more turns than planStateTurns are read at the plan's blocks.
	starts := make([]string, 0, len(d.Turns))
	var digests []string
	if len(d.Turns) <= planStateTurns {
		digests = make([]string, 0, 2*len(d.Turns))
	}
	for _, t := range d.Turns {
		st := t.StartDigest.String()
		starts = append(starts, st)
		if digests != nil {
			digests = append(digests, st, t.EndDigest.String())
		}
	}
	st, err := e.store.PlanState(ctx, sc.ID, newest.EndDigest.String(), digests, starts, maxCandidates)
	switch {
	case errors.Is(err, ledger.ErrTooLarge):
		return plan{}, "plan_too_large"
	case err != nil:
		return plan{}, "plan_read_failed"
	case !st.Known:
		return plan{}, "new_scope"
	case len(st.Candidates) == 0:
		return plan{}, "no_candidate"
	}
	v := validator{e: e, ctx: ctx, sc: sc, gen: st.Generation, d: d, req: req, now: e.cfg.Now(),
		endIndex: make(map[string]int, len(d.Turns)), state: &st, turnMarkers: digests != nil}
	for i, b := range d.Turns {
		v.endIndex[b.EndDigest.String()] = i
	}
	reason := "no_candidate"
	for i, id := range st.Candidates {
		if i == maxCandidates {
			break
		}
		c, err := e.store.PlanCandidate(ctx, id)
		switch {
		case errors.Is(err, ledger.ErrTooLarge):
			return plan{}, "plan_too_large"
		case err != nil:
			return plan{}, "plan_read_failed"
		}
		blocks := append(slices.Clip(c.PriorPlan), ledger.PlanBlock{ObservationID: c.ID, PayloadID: c.PayloadID, EndDigest: c.EndDigest})
		p, why := v.validate(blocks)
		if len(p.blocks) > 0 {
			return p, why
		}
		reason = why
	}
	return plan{}, reason
}

// validator checks proposed plans of one request.
type validator struct {
	e        *Engine
	ctx      context.Context
	sc       ledger.Scope
	gen      int64
	d        *canonical.Digests
	req      *Request
	now      time.Time
	endIndex map[string]int    // turn end digest -> turn index
	state    *ledger.PlanState // the scope's markers, intents and snapshots

	turnMarkers bool // state holds the markers at every turn's digests
}

// planStateTurns is the most turns whose digests the plan state reads
// markers at (two keys a turn, within the ledger's bulk-read limit). A
// variable only so that a test reaches the long-history path with a
// short history.
var planStateTurns = 2048

// validate returns the longest valid prefix of blocks and, when it is
// shorter than blocks, the reason the next block failed.
func (v *validator) validate(blocks []ledger.PlanBlock) (plan, string) {
	why := ""
	if len(blocks) > v.e.cfg.MaxPlanBlocks {
		blocks, why = blocks[:v.e.cfg.MaxPlanBlocks], "plan_budget"
	}
	// Ancestors in the current history, in the same order, each strictly
	// before the next.
	turns := make([]int, 0, len(blocks))
	last := -1
	for i, st := range blocks {
		bi, ok := v.endIndex[st.EndDigest]
		if !ok || bi <= last {
			blocks, why = blocks[:i], "ancestry_mismatch"
			break
		}
		turns = append(turns, bi)
		last = bi
	}
	if len(blocks) == 0 {
		return plan{}, why
	}
	ids := make([]int64, len(blocks))
	for i, st := range blocks {
		ids[i] = st.ObservationID
	}
	rows, err := v.e.store.PlanObservations(v.ctx, v.sc.ID, ids)
	if err != nil {
		return plan{}, "plan_read_failed"
	}
	obs := make(map[int64]ledger.Observation, len(rows))
	for _, o := range rows {
		obs[o.ID] = o
	}
	markers, err := v.markers(rows)
	if err != nil {
		return plan{}, "plan_read_failed"
	}
	poisoned, conflicted := map[string]bool{}, map[string]bool{}
	for _, m := range markers {
		switch m.Kind {
		case ledger.MarkerStartPoison:
			poisoned[m.Digest] = true
		case ledger.MarkerEndConflict:
			conflicted[m.Digest] = true
		}
	}
	unresolved := map[string][]int64{}
	for _, in := range v.state.Intents {
		unresolved[in.StartDigest] = append(unresolved[in.StartDigest], in.ID)
	}
	payloadIDs := make([]int64, len(blocks))
	for i, st := range blocks {
		payloadIDs[i] = st.PayloadID
	}
	payloads, err := v.e.store.PlanPayloads(v.ctx, payloadIDs)
	if err != nil {
		return plan{}, "payload_unavailable"
	}

	p := plan{gen: v.gen}
	for i, st := range blocks {
		b := v.d.Turns[turns[i]]
		o, ok := obs[st.ObservationID]
		if !ok {
			return p, "missing_ancestor"
		}
		if r := v.checkBlock(st, o, b, poisoned, conflicted, unresolved); r != "" {
			return p, r
		}
		v.e.store.NoteTouched(st.PayloadID) // inspected and validated: a retention touch, batched
		pl, err := payloads.Payload(v.ctx, st.PayloadID)
		if err != nil {
			return p, "payload_unavailable"
		}
		items, calls, ok := v.e.splits.split(st.PayloadID, pl.Output)
		if !ok {
			return p, "payload_invalid"
		}
		rng := [2]int{v.req.Spans[b.First][0], v.req.Spans[b.End-1][1]}
		if translated, ok := callIDs(v.req.Input[rng[0]:rng[1]]); !ok || !slices.Equal(calls, translated) {
			// the tool results that follow must still answer the calls
			return p, "call_mismatch"
		}
		if p.bytes+pl.Size > v.e.cfg.ReplayCeiling {
			return p, "replay_ceiling"
		}
		p.blocks = append(p.blocks, st)
		p.ranges = append(p.ranges, rng)
		p.items = append(p.items, items)
		p.bytes += pl.Size
		p.snapshots = append(p.snapshots, o.ModelSnapshot)
		p.sizes = append(p.sizes, pl.Size)
	}
	return v.inheritSnapshot(p, why)
}

// markers returns the markers a plan of the observations rows can meet:
// the plan state's, or for a history too long for it, those at the
// rows' own digests.
func (v *validator) markers(rows []ledger.Observation) ([]ledger.Marker, error) {
	if v.turnMarkers {
		return v.state.Markers, nil
	}
	digests := make([]string, 0, 2*len(rows))
	for _, o := range rows {
		digests = append(digests, o.StartDigest, o.EndDigest)
	}
	return v.e.store.MarkersAt(v.ctx, v.sc.ID, digests)
}

// inheritSnapshot applies the snapshot heuristic the design's way: only
// the observation that determines the plan (its last block) must carry an
// accepted model snapshot, and the earlier blocks inherit that acceptance. A
// plan whose last block is not accepted falls back to its longest prefix
// whose last block is. The heuristic only avoids replay the provider may
// refuse; it never decides which output belongs where.
func (v *validator) inheritSnapshot(p plan, why string) (plan, string) {
	for n := len(p.blocks); n > 0; n-- {
		if v.snapshotAccepted(p.snapshots[n-1]) {
			if n < len(p.blocks) {
				why = "snapshot_rejected"
			}
			return p.prefix(n), why
		}
	}
	return plan{gen: p.gen}, "snapshot_rejected"
}

// checkBlock validates one block against its turn in the current history.
func (v *validator) checkBlock(st ledger.PlanBlock, o ledger.Observation, b canonical.Turn,
	poisoned, conflicted map[string]bool, unresolved map[string][]int64) string {
	switch {
	case o.Generation != v.gen:
		return "stale_generation"
	case o.EndDigest != st.EndDigest || o.EndDigest != b.EndDigest.String():
		return "ancestor_mismatch"
	case o.StartDigest != b.StartDigest.String():
		return "start_mismatch"
	case o.EnvelopeFP != b.Fingerprint.String():
		return "envelope_mismatch"
	case !o.Replayable || o.PayloadID == 0 || o.PayloadID != st.PayloadID:
		return "not_replayable"
	case conflicted[o.EndDigest]:
		return "end_conflict"
	case poisoned[o.StartDigest]:
		return "start_poisoned"
	}
	for _, id := range unresolved[o.StartDigest] {
		if id != o.IntentID {
			return "competing_intent"
		}
	}
	return ""
}

// snapshotAccepted accepts the scope's latest observed snapshot, or one
// observed within ModelSnapshotWindow.
func (v *validator) snapshotAccepted(name string) bool {
	if name == "" {
		return false
	}
	for i, sn := range v.state.Snapshots {
		if sn.Snapshot == name {
			return i == 0 || v.now.Sub(sn.LastSeen) <= ModelSnapshotWindow
		}
	}
	return false
}

// itemHead is what the planner reads of an item.
type itemHead struct {
	Type   string `json:"type"`
	Role   string `json:"role"`
	CallID string `json:"call_id"`
}

// payloadItems splits a stored output array (valid JSON: ledger.Payload
// checks it once when it loads it) into its items (exact bytes), checks
// that every item is one the relay replays and returns the tool call ids
// of its calls, in order.
func payloadItems(output json.RawMessage) (items []json.RawMessage, calls []string, ok bool) {
	items, ok = jsonscan.SplitArray(output)
	if !ok || len(items) == 0 {
		return nil, nil, false
	}
	for _, it := range items {
		h, ok := headOf(it)
		if !ok {
			return nil, nil, false
		}
		switch h.Type {
		case "reasoning":
		case "function_call", "custom_tool_call":
			calls = append(calls, h.CallID)
		case "message":
			if h.Role != "assistant" {
				return nil, nil, false
			}
		default:
			return nil, nil, false
		}
	}
	return items, calls, true
}

func callIDs(items []json.RawMessage) ([]string, bool) {
	var ids []string
	for _, it := range items {
		h, ok := headOf(it)
		if !ok {
			return nil, false
		}
		if h.Type == "function_call" || h.Type == "custom_tool_call" {
			ids = append(ids, h.CallID)
		}
	}
	return ids, true
}
