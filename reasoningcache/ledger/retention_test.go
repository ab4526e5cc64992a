package ledger

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"
)

// fakeClock is a wall and monotonic clock the test moves by hand.
type fakeClock struct {
	mu   sync.Mutex
	wall time.Time
	mono time.Duration
}

func newFakeClock() *fakeClock {
	return &fakeClock{wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), mono: time.Hour}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.wall
}

func (c *fakeClock) Monotonic() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mono
}

// advance moves both clocks by d, in steps of at most an hour, sampling
// the store's barrier at each step as its maintenance loop would.
func (c *fakeClock) advance(s *Store, d time.Duration) {
	for d > 0 {
		step := min(d, time.Hour)
		c.mu.Lock()
		c.wall = c.wall.Add(step)
		c.mono += step
		c.mu.Unlock()
		if s != nil {
			s.barrier.sample()
		}
		d -= step
	}
}

// stepWall moves only the wall clock (an NTP step, a manual change).
func (c *fakeClock) stepWall(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(d)
}

const day = 24 * time.Hour

func openClocked(t *testing.T, clk *fakeClock, opts Options) *Store {
	t.Helper()
	opts.Clock = clk
	opts.manualMaintenance = true
	if opts.ReserveBytes == 0 {
		opts.ReserveBytes = MinReserveBytes
	}
	return openTest(t, "", opts)
}

func payloadCount(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM payloads`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func mustCleanup(t *testing.T, s *Store) CleanupResult {
	t.Helper()
	res, err := s.Cleanup(context.Background())
	if err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	return res
}

func TestRetentionBarrierAndIdleCutoff(t *testing.T) {
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)

	clk.advance(s, 29*day)
	if res := mustCleanup(t, s); !res.Blocked || res.Deleted != 0 {
		t.Fatalf("day 29: %+v, want blocked by the restart barrier", res)
	}
	clk.advance(s, 2*day)
	if res := mustCleanup(t, s); res.Blocked || res.Deleted != 1 {
		t.Fatalf("day 31: %+v, want the idle payload deleted", res)
	}
	if n := payloadCount(t, s); n != 0 {
		t.Fatalf("%d payloads left", n)
	}
}

func TestRetentionLongerThanBarrier(t *testing.T) {
	clk := newFakeClock()
	s := openClocked(t, clk, Options{Retention: 60 * day})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	clk.advance(s, 31*day)
	if res := mustCleanup(t, s); res.Blocked || res.Deleted != 0 {
		t.Fatalf("day 31: %+v; the barrier passed but the payload is not 60 days idle", res)
	}
	clk.advance(s, 30*day)
	if res := mustCleanup(t, s); res.Deleted != 1 {
		t.Fatalf("day 61: %+v, want 1 deleted", res)
	}
}

func TestRetentionMinimum(t *testing.T) {
	_, err := Open(t.TempDir()+"/c.sqlite", Options{Retention: 29 * day})
	if err == nil {
		t.Fatal("a retention under 30 days was accepted")
	}
	_, err = Open(t.TempDir()+"/c.sqlite", Options{ReserveBytes: 1000})
	if err == nil {
		t.Fatal("a reserve under 64 KiB was accepted")
	}
}

// An old store restarted: the barrier starts again with the process, even
// though every payload is long idle.
func TestRetentionBarrierPerProcess(t *testing.T) {
	clk := newFakeClock()
	path := t.TempDir() + "/c.sqlite"
	s := openTest(t, path, Options{Clock: clk, manualMaintenance: true, ReserveBytes: MinReserveBytes})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	clk.advance(s, 20*day)
	mustClose(t, s)
	clk.advance(nil, 20*day) // down for 20 days
	s = openTest(t, path, Options{Clock: clk, manualMaintenance: true, ReserveBytes: MinReserveBytes})
	clk.advance(s, 20*day) // payload 60 days idle, process 20 days up
	if res := mustCleanup(t, s); !res.Blocked {
		t.Fatalf("%+v: a restarted process deleted inside its barrier", res)
	}
	clk.advance(s, 10*day)
	if res := mustCleanup(t, s); res.Deleted != 1 {
		t.Fatalf("%+v: want 1 deleted 30 days after the restart", res)
	}
}

func TestRetentionBackwardStepResetsBarrier(t *testing.T) {
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	clk.advance(s, 29*day)
	clk.stepWall(-time.Second)
	s.barrier.sample()
	if st := s.barrier.state(); st.Reason != BarrierClockBackward || st.Resets != 1 {
		t.Fatalf("barrier after a backward step: %+v", st)
	}
	clk.advance(s, 2*day)
	if res := mustCleanup(t, s); !res.Blocked {
		t.Fatalf("%+v: deleted 2 days after a backward step", res)
	}
	clk.advance(s, 28*day)
	if res := mustCleanup(t, s); res.Blocked || res.Deleted != 1 {
		t.Fatalf("%+v: want 1 deleted 30 days after the step", res)
	}
}

func TestRetentionDriftResetsBarrier(t *testing.T) {
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	clk.advance(s, 29*day)
	clk.stepWall(59 * time.Second) // within the allowed drift
	s.barrier.sample()
	if st := s.barrier.state(); st.Resets != 0 {
		t.Fatalf("a 59 s drift reset the barrier: %+v", st)
	}
	clk.stepWall(61 * time.Second) // forward jump over 60 s
	s.barrier.sample()
	if st := s.barrier.state(); st.Reason != BarrierClockDrift || st.Resets != 1 {
		t.Fatalf("barrier after a 61 s forward jump: %+v", st)
	}
	clk.advance(s, 2*day)
	if res := mustCleanup(t, s); !res.Blocked {
		t.Fatalf("%+v: deleted 2 days after a forward jump", res)
	}
	// The wall clock stands still while monotonic time runs (a suspended
	// clock source): drift the other way.
	clk.mu.Lock()
	clk.mono += 2 * time.Minute
	clk.mu.Unlock()
	s.barrier.sample()
	if st := s.barrier.state(); st.Resets != 2 {
		t.Fatalf("barrier after the wall clock lagged 2 minutes: %+v", st)
	}
}

// chain stores n turns of one conversation, each replaying the whole
// chain before it, and returns their plan steps.
func chain(t *testing.T, s *Store, sc Scope, label string, n int) []PlanBlock {
	t.Helper()
	var plan []PlanBlock
	start := dig("%s start", label)
	for i := 0; i < n; i++ {
		end := dig("%s end %d", label, i)
		st := storeTurn(t, s, sc, 1, start, end, plan)
		plan = append(append([]PlanBlock(nil), plan...), st)
		start = dig("%s next %d", label, i)
	}
	return plan
}

func hasPayload(t *testing.T, s *Store, obs int64) bool {
	t.Helper()
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM observations WHERE observation_id = ? AND payload_id IS NOT NULL`, obs).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

func TestCleanupDescendantsFirstAndLimit(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	sc := testScope(1)
	long := chain(t, s, sc, "long", 130) // one conversation of 130 turns
	var markersBefore, obsBefore int
	_ = s.db.QueryRow(`SELECT (SELECT count(*) FROM markers), (SELECT count(*) FROM observations)`).Scan(&markersBefore, &obsBefore)
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerEndConflict, Digest: dig("somewhere"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}
	clk.advance(s, 31*day)

	res := mustCleanup(t, s)
	if res.Deleted != CleanupLimit {
		t.Fatalf("first run deleted %d, want the limit %d", res.Deleted, CleanupLimit)
	}
	// Descendants before ancestors: the newest 100 turns went, the oldest
	// 30 stay, each still with its whole ancestry.
	for i, st := range long {
		if want := i < 30; hasPayload(t, s, st.ObservationID) != want {
			t.Fatalf("turn %d: payload kept = %v, want %v", i, !want, want)
		}
	}
	if res := mustCleanup(t, s); res.Deleted != 30 {
		t.Fatalf("second run deleted %d, want 30", res.Deleted)
	}
	// Observations and markers are kept; a deleted payload's observation
	// stays, unreplayable, and can no longer be planned.
	var markers, obs int
	_ = s.db.QueryRow(`SELECT (SELECT count(*) FROM markers), (SELECT count(*) FROM observations)`).Scan(&markers, &obs)
	if markers != markersBefore+1 || obs != obsBefore {
		t.Fatalf("markers %d→%d, observations %d→%d: cleanup deleted knowledge", markersBefore+1, markers, obsBefore, obs)
	}
	cands, err := s.Candidates(ctx, sc.ID, long[0].EndDigest)
	if err != nil || len(cands) != 1 || cands[0].Replayable || cands[0].PayloadID != 0 {
		t.Fatalf("candidate after cleanup: %+v, %v", cands, err)
	}
	_, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x"), Plan: long[:1]})
	if !IsReason(err, ReasonNotReplayable) {
		t.Fatalf("planning a cleaned-up turn: %v", err)
	}
}

func TestCleanupKeepsPinnedCompetedAndAncestorsOfRetained(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	sc := testScope(1)
	pinned := chain(t, s, sc, "pinned", 3)
	competed := chain(t, s, sc, "competed", 1)
	retained := chain(t, s, sc, "retained", 3)
	free := chain(t, s, sc, "free", 2)

	clk.advance(s, 31*day)
	// An active intent replays the whole pinned chain.
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("pinned next"), Plan: pinned}); err != nil {
		t.Fatal(err)
	}
	// A competitor is generating at the competed turn's position.
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("competed start")}); err != nil {
		t.Fatal(err)
	}
	// The retained chain's last turn was touched recently.
	if err := s.TouchPayloads(ctx, clk.Now(), retained[2].PayloadID); err != nil {
		t.Fatal(err)
	}
	// The CreateIntent above touched the pinned chain: let it age again.
	clk.advance(s, 31*day)
	if err := s.TouchPayloads(ctx, clk.Now(), retained[2].PayloadID); err != nil {
		t.Fatal(err)
	}
	res := mustCleanup(t, s)
	if res.Deleted != len(free) {
		t.Fatalf("deleted %d, want only the %d free turns", res.Deleted, len(free))
	}
	for _, st := range free {
		if hasPayload(t, s, st.ObservationID) {
			t.Fatal("a free payload was kept")
		}
	}
	for name, steps := range map[string][]PlanBlock{"pinned": pinned, "competed": competed, "retained": retained} {
		for i, st := range steps {
			if !hasPayload(t, s, st.ObservationID) {
				t.Fatalf("%s turn %d lost its payload", name, i)
			}
		}
	}
}

func TestTouchesUseMaxAndAreBatched(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	st := storeTurn(t, s, testScope(1), 1, dig("s"), dig("e"), nil)
	touched := func() int64 {
		var at int64
		if err := s.db.QueryRow(`SELECT touched_at FROM payloads WHERE payload_id = ?`, st.PayloadID).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at
	}
	t0 := touched()
	clk.advance(s, day)
	batches := s.Stats().Batches
	for i := 0; i < 50; i++ {
		s.NoteTouched(st.PayloadID) // the planner validated it, 50 requests
	}
	if touched() != t0 || s.Stats().Batches != batches {
		t.Fatal("NoteTouched wrote on the request path")
	}
	if err := s.flushTouches(ctx); err != nil {
		t.Fatal(err)
	}
	if got := touched(); got != clk.Now().UnixMilli() {
		t.Fatalf("touched_at = %d, want %d", got, clk.Now().UnixMilli())
	}
	if n := s.Stats().Batches - batches; n != 1 {
		t.Fatalf("%d batches for 50 touches, want 1", n)
	}
	// An older touch never moves touched_at back.
	if err := s.TouchPayloads(ctx, clk.Now().Add(-2*day), st.PayloadID); err != nil {
		t.Fatal(err)
	}
	if got := touched(); got != clk.Now().UnixMilli() {
		t.Fatal("an older touch moved touched_at back")
	}
}

// TestDependencyRowsLinear: a 200-turn conversation, each turn replaying
// the whole chain before it, stores one ancestry row per observation, not
// one per replayed step (which grows quadratically).
func TestDependencyRowsLinear(t *testing.T) {
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	const turns = 200
	chain(t, s, testScope(1), "conv", turns)
	var obs, deps, planBytes int64
	if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM dependencies WHERE kind = 'ancestry'),
		(SELECT sum(length(prior_plan)) FROM observations)`).Scan(&obs, &deps, &planBytes); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d-turn conversation: %d observations, %d ancestry rows (%.2f per observation), prior plans %d bytes (%.0f per observation)",
		turns, obs, deps, float64(deps)/float64(obs), planBytes, float64(planBytes)/float64(obs))
	if deps != turns-1 {
		t.Fatalf("%d ancestry rows for %d turns, want %d (one per turn with a parent)", deps, turns, turns-1)
	}
	if planBytes > 4*turns {
		t.Fatalf("prior plans take %d bytes for %d turns: not linked", planBytes, turns)
	}
	// The linked plans read back whole: the last turn's is the 199 turns
	// before it, in order.
	last := chainEnd(t, s, "conv", turns)
	cands, err := s.Candidates(context.Background(), testScope(1).ID, last)
	if err != nil || len(cands) != 1 || len(cands[0].PriorPlan) != turns-1 {
		t.Fatalf("candidates: %d, %v", len(cands), err)
	}
	for i, st := range cands[0].PriorPlan {
		if st.EndDigest != chainEnd(t, s, "conv", i+1) || st.PayloadID == 0 || st.ObservationID == 0 {
			t.Fatalf("step %d of the read-back plan: %+v", i, st)
		}
	}
}

// chainEnd is the end digest of turn n (1-based) of chain's conversation.
func chainEnd(t *testing.T, _ *Store, label string, n int) string {
	t.Helper()
	return dig("%s end %d", label, n-1)
}

// TestLinkedPlanOverFullRow: a linked plan whose chain reaches a row that
// stores its plan in full (a row written before plans were linked) reads
// back the full row's plan followed by the linked steps.
func TestLinkedPlanOverFullRow(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{manualMaintenance: true, ReserveBytes: MinReserveBytes})
	steps := chain(t, s, testScope(1), "mix", 4)
	full, err := json.Marshal(steps[:1])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.wconn.ExecContext(ctx, `UPDATE observations SET prior_plan = ?, parent_id = NULL WHERE observation_id = ?`,
		string(full), steps[1].ObservationID); err != nil {
		t.Fatal(err)
	}
	cands, err := s.Candidates(ctx, testScope(1).ID, steps[3].EndDigest)
	if err != nil || len(cands) != 1 {
		t.Fatalf("candidates: %v, %v", cands, err)
	}
	if !reflect.DeepEqual(cands[0].PriorPlan, steps[:3]) {
		t.Fatalf("plan %+v, want %+v", cands[0].PriorPlan, steps[:3])
	}
	// A broken link (its parent's plan no longer has the count the row
	// says) fails the read instead of returning a wrong plan.
	if _, err := s.wconn.ExecContext(ctx, `UPDATE observations SET prior_plan = '[]', plan_count = 0 WHERE observation_id = ?`,
		steps[1].ObservationID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Candidates(ctx, testScope(1).ID, steps[3].EndDigest); err == nil {
		t.Fatal("an inconsistent linked plan was read back")
	}
	// A turn built on that chain is still recorded, with its plan in full.
	next := storeTurn(t, s, testScope(1), 1, dig("mix after"), dig("mix end after"), steps)
	var prior string
	if err := s.db.QueryRow(`SELECT prior_plan FROM observations WHERE observation_id = ?`, next.ObservationID).Scan(&prior); err != nil {
		t.Fatal(err)
	}
	if prior == linkedPlan {
		t.Fatal("a plan over a broken chain was stored as a link")
	}
}
