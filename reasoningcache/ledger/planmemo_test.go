package ledger

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestPlanReadsMatchSQL is the plan memo's property test: random
// sequences of every write that changes what a plan reads (turns with
// linked and full plans, unresolved, resolved and poisoned intents,
// markers of both kinds, generation advances, retention cleanup that
// unlinks and deletes payloads) interleaved with plan reads, and after
// every write the memo-backed reads (PlanState, PlanCandidate,
// PlanObservations, PlanPayloads) must answer exactly what the SQL reads
// (ScopeState, Candidates, MarkersAt, IntentsAt, ModelSnapshots,
// Observations, Payloads) answer.
func TestPlanReadsMatchSQL(t *testing.T) {
	seeds := 12
	if testing.Short() {
		seeds = 3
	}
	var cov planCoverage
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { planMemoProperty(t, uint64(seed), &cov) })
	}
	// The sequences must reach what could go stale.
	t.Logf("coverage: %+v", cov)
	if cov.linked == 0 || cov.fullPlans == 0 || cov.deleted == 0 || cov.unlinked == 0 || cov.markers == 0 || cov.pending == 0 {
		t.Fatalf("the random sequences missed a case: %+v", cov)
	}
}

// planCoverage counts what the property test's sequences reached.
type planCoverage struct {
	linked, fullPlans int // candidates compared with a linked / full plan
	unlinked          int // candidates compared after cleanup unlinked them
	deleted           int // payloads cleanup deleted
	markers, pending  int // markers and unresolved intents PlanState returned
}

func planMemoProperty(t *testing.T, seed uint64, cov *planCoverage) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	scopes := []Scope{testScope(1), testScope(2)}
	pool := make([]string, 10)
	for i := range pool {
		pool[i] = dig("position %d", i)
	}
	pick := func() string { return pool[rng.IntN(len(pool))] }
	var pending []int64 // unresolved intents
	var maxObs int64

	gens := map[string]int64{}
	gen := func(sc Scope) int64 {
		g, err := s.ScopeGeneration(ctx, sc.ID)
		if err != nil {
			t.Fatal(err)
		}
		gens[sc.ID] = g
		return g
	}

	for step := range 120 {
		sc := scopes[rng.IntN(len(scopes))]
		clk.advance(s, time.Duration(rng.IntN(5))*day)
		op := rng.IntN(12)
		switch {
		case op < 6: // a turn, planned from what the planner would read
			var plan []PlanBlock
			g := gen(sc)
			if cands, err := s.Candidates(ctx, sc.ID, pick()); err == nil && len(cands) > 0 && rng.IntN(4) > 0 {
				c := cands[rng.IntN(len(cands))]
				if !c.Replayable {
					break
				}
				plan = append(slices.Clip(c.PriorPlan), PlanBlock{ObservationID: c.ID, PayloadID: c.PayloadID, EndDigest: c.EndDigest})
				if rng.IntN(2) == 0 && len(plan) > 1 {
					plan = plan[1:] // stored in full: not its last block's plan
				}
			}
			id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: g, StartDigest: pick(), Plan: plan})
			if err != nil {
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("step %d: CreateIntent: %v", step, err)
				}
				break
			}
			end := pick()
			res, err := s.CommitObservation(ctx, CommitObservationRequest{
				IntentID: id, EndDigest: end, EnvelopeFP: dig("env %d", step), PayloadFP: dig("payload %d", rng.IntN(8)),
				OutputHash: dig("out %d", step), Replayable: rng.IntN(6) > 0,
				Payload:       []byte(fmt.Sprintf(`[{"type":"reasoning","id":"rs_%d"}]`, rng.IntN(8))),
				ModelSnapshot: fmt.Sprintf("m-%d", rng.IntN(3)), MoveToDelivery: true,
			})
			if err != nil {
				t.Fatalf("step %d: CommitObservation: %v", step, err)
			}
			maxObs = max(maxObs, res.ObservationID)
			if rng.IntN(3) == 0 {
				pending = append(pending, id)
			} else if err := s.ResolveIntent(ctx, id); err != nil {
				t.Fatalf("step %d: ResolveIntent: %v", step, err)
			}
		case op == 6: // an intent still in flight
			id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: pick()})
			if err != nil {
				t.Fatalf("step %d: CreateIntent: %v", step, err)
			}
			pending = append(pending, id)
		case op == 7 && len(pending) > 0: // one ends
			i := rng.IntN(len(pending))
			id := pending[i]
			pending = slices.Delete(pending, i, i+1)
			var err error
			if rng.IntN(2) == 0 {
				err = s.ResolveIntent(ctx, id)
			} else {
				err = s.PoisonIntent(ctx, id, "test")
			}
			if err != nil {
				t.Fatalf("step %d: end intent: %v", step, err)
			}
		case op == 8 && rng.IntN(2) == 0:
			kind := MarkerStartPoison
			if rng.IntN(2) == 0 {
				kind = MarkerEndConflict
			}
			if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: kind, Digest: pick(), Reason: "test"}}); err != nil {
				t.Fatalf("step %d: WriteMarkers: %v", step, err)
			}
		case op == 9 && rng.IntN(3) == 0:
			if _, err := s.AdvanceGenerations(ctx, sc.ID); err != nil {
				t.Fatalf("step %d: AdvanceGenerations: %v", step, err)
			}
		case op >= 10:
			res, err := s.Cleanup(ctx)
			if err != nil {
				t.Fatalf("step %d: Cleanup: %v", step, err)
			}
			cov.deleted += res.Deleted
		}
		for _, sc := range scopes {
			comparePlanReads(t, s, sc, pool, maxObs, fmt.Sprintf("step %d", step), cov)
		}
	}
}

// comparePlanReads holds every memo-backed plan read of scope sc to its
// SQL read.
func comparePlanReads(t *testing.T, s *Store, sc Scope, pool []string, maxObs int64, at string, cov *planCoverage) {
	t.Helper()
	ctx := context.Background()
	stState, known, err := s.ScopeState(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	wantMarkers, err := s.MarkersAt(ctx, sc.ID, pool)
	if err != nil {
		t.Fatal(err)
	}
	wantIntents, err := s.IntentsAt(ctx, sc.ID, pool)
	if err != nil {
		t.Fatal(err)
	}
	wantSnaps, err := s.ModelSnapshots(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range pool {
		got, err := s.PlanState(ctx, sc.ID, end, pool, pool, s.opts.MaxCandidates)
		if err != nil {
			t.Fatalf("%s: PlanState: %v", at, err)
		}
		cands, err := s.Candidates(ctx, sc.ID, end)
		if err != nil {
			t.Fatalf("%s: Candidates: %v", at, err)
		}
		if got.Known != known || (known && got.Generation != stState.Generation) {
			t.Fatalf("%s: PlanState scope %v/%d, SQL %v/%d", at, got.Known, got.Generation, known, stState.Generation)
		}
		if !known {
			continue
		}
		var ids []int64
		for _, c := range cands {
			ids = append(ids, c.ID)
		}
		if !slices.Equal(got.Candidates, ids) {
			t.Fatalf("%s: PlanState candidates %v, SQL %v", at, got.Candidates, ids)
		}
		var gm, wm []string
		for _, m := range got.Markers {
			gm = append(gm, m.Kind+" "+m.Digest)
		}
		for _, m := range wantMarkers {
			wm = append(wm, m.Kind+" "+m.Digest)
		}
		slices.Sort(gm)
		slices.Sort(wm)
		if !slices.Equal(gm, wm) {
			t.Fatalf("%s: PlanState markers %v, SQL %v", at, gm, wm)
		}
		var gi, wi []string
		for _, in := range got.Intents {
			gi = append(gi, fmt.Sprint(in.ID, in.StartDigest))
		}
		for _, in := range wantIntents {
			wi = append(wi, fmt.Sprint(in.ID, in.StartDigest))
		}
		if !slices.Equal(gi, wi) {
			t.Fatalf("%s: PlanState intents %v, SQL %v", at, gi, wi)
		}
		cov.markers += len(got.Markers)
		cov.pending += len(got.Intents)
		if !reflect.DeepEqual(got.Snapshots, wantSnaps) {
			t.Fatalf("%s: PlanState snapshots %+v, SQL %+v", at, got.Snapshots, wantSnaps)
		}
		for _, c := range cands {
			pc, err := s.PlanCandidate(ctx, c.ID)
			if err != nil {
				t.Fatalf("%s: PlanCandidate %d: %v", at, c.ID, err)
			}
			switch {
			case !c.Replayable && c.PayloadID == 0:
				cov.unlinked++
			case len(c.PriorPlan) > 0:
				if e, _ := s.memo.observation(c.ID); e.linked() {
					cov.linked++
				} else {
					cov.fullPlans++
				}
			}
			if !reflect.DeepEqual(pc, c) {
				t.Fatalf("%s: PlanCandidate %d\n%+v\nCandidates\n%+v", at, c.ID, pc, c)
			}
		}
	}
	var all []int64
	for id := int64(1); id <= maxObs+1; id++ {
		all = append(all, id)
	}
	gotObs, err := s.PlanObservations(ctx, sc.ID, all)
	if err != nil {
		t.Fatal(err)
	}
	wantObs, err := s.Observations(ctx, sc.ID, all)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotObs, wantObs) {
		t.Fatalf("%s: PlanObservations\n%+v\nObservations\n%+v", at, gotObs, wantObs)
	}
	var pays []int64
	for id := int64(1); id <= 10; id++ {
		pays = append(pays, id)
	}
	gotSet, err := s.PlanPayloads(ctx, pays)
	if err != nil {
		t.Fatal(err)
	}
	wantSet, err := s.Payloads(ctx, pays)
	if err != nil {
		t.Fatal(err)
	}
	for id, w := range wantSet.metas {
		w.p.TouchedAt = time.Time{}
		wantSet.metas[id] = w
	}
	if !reflect.DeepEqual(gotSet.metas, wantSet.metas) {
		t.Fatalf("%s: PlanPayloads %+v, Payloads %+v", at, gotSet.metas, wantSet.metas)
	}
	for _, id := range pays {
		g, gerr := gotSet.Payload(ctx, id)
		w, werr := wantSet.Payload(ctx, id)
		if (gerr == nil) != (werr == nil) || (gerr == nil && string(g.Output) != string(w.Output)) {
			t.Fatalf("%s: payload %d output differs: %v / %v", at, id, gerr, werr)
		}
	}
}

// TestPlanMemoRefusesRowsReadBeforeAReset: a row read before Cleanup's
// reset and put after it would be stale forever; the epoch refuses it.
func TestPlanMemoRefusesRowsReadBeforeAReset(t *testing.T) {
	m := newPlanMemo(8, 1<<20)
	epoch := m.begin()
	m.reset()
	m.put(epoch, []memoObs{{o: Observation{ID: 1}}}, []payloadMeta{{p: Payload{ID: 1}}})
	if _, ok := m.observation(1); ok {
		t.Fatal("an observation read before the reset was kept")
	}
	if _, ok := m.payload(1); ok {
		t.Fatal("a payload read before the reset was kept")
	}
	m.put(m.begin(), []memoObs{{o: Observation{ID: 1}}}, nil)
	if _, ok := m.observation(1); !ok {
		t.Fatal("a row read after the reset was refused")
	}
}

// TestPlanCandidateLimits: a recorded plan over the size limits fails
// PlanCandidate with ErrTooLarge exactly where Candidates fails, whether
// its JSON is too long or its block count too high, and whether the
// limit is met by the candidate itself or by the full plan at the base
// of its linked chain.
func TestPlanCandidateLimits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.sqlite")
	s := openTest(t, path, Options{})
	sc := testScope(1)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	b := storeTurn(t, s, sc, 1, dig("s1"), dig("e1"), []PlanBlock{a})    // linked to a
	c := storeTurn(t, s, sc, 1, dig("s2"), dig("e2"), []PlanBlock{b})    // full: b's own plan is [a]
	d := storeTurn(t, s, sc, 1, dig("s3"), dig("e3"), []PlanBlock{b, c}) // linked to c, whose plan is full
	mustClose(t, s)

	// One block of plan JSON is about 110 bytes.
	s = openTest(t, path, Options{MaxPlanBytes: 64})
	for _, st := range []PlanBlock{a, b, c, d} {
		want, werr := s.Candidates(ctx, sc.ID, st.EndDigest)
		got, gerr := s.PlanCandidate(ctx, st.ObservationID)
		if errors.Is(werr, ErrTooLarge) != errors.Is(gerr, ErrTooLarge) || (werr == nil) != (gerr == nil) {
			t.Fatalf("observation %d: PlanCandidate %v, Candidates %v", st.ObservationID, gerr, werr)
		}
		if werr == nil && !reflect.DeepEqual([]Observation{got}, want) {
			t.Fatalf("observation %d: PlanCandidate %+v, Candidates %+v", st.ObservationID, got, want)
		}
	}
	if _, err := s.PlanCandidate(ctx, c.ObservationID); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a full plan over MaxPlanBytes: %v", err)
	}
	if _, err := s.PlanCandidate(ctx, d.ObservationID); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a linked plan on a full plan over MaxPlanBytes: %v", err)
	}
	mustClose(t, s)

	s = openTest(t, path, Options{})
	if _, err := s.wconn.ExecContext(ctx, `UPDATE observations SET plan_count = 100000 WHERE observation_id = ?`, b.ObservationID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlanCandidate(ctx, b.ObservationID); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a block count over MaxPlanBlocks: %v", err)
	}
}

// TestPlanMemoBound: the memo never holds more than its bound; past it
// it starts over rather than growing.
func TestPlanMemoBound(t *testing.T) {
	m := newPlanMemo(3, 250)
	for id := int64(1); id <= 10; id++ {
		prior := strings.Repeat("x", int(id%3)*50)
		m.put(m.begin(), []memoObs{{o: Observation{ID: id}, prior: prior}}, []payloadMeta{{p: Payload{ID: id}}})
		n := 0
		for _, e := range m.obs {
			n += len(e.prior)
		}
		if len(m.obs) > 3 || len(m.pays) > 3 || n > 250 || n != m.bytes {
			t.Fatalf("after %d puts: %d observations, %d payloads, %d plan bytes (counted %d), bounds 3 and 250",
				id, len(m.obs), len(m.pays), n, m.bytes)
		}
		if _, ok := m.observation(id); !ok {
			t.Fatalf("observation %d was not kept", id)
		}
	}
}
