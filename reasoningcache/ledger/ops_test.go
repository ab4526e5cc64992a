package ledger

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// holdWriter parks the writer inside a batch until release is called, so
// that operations submitted meanwhile end up together in the next batch.
func holdWriter(t *testing.T, s *Store) (release func()) {
	t.Helper()
	parked := make(chan struct{})
	gate := make(chan struct{})
	go func() {
		_ = s.submit(context.Background(), "hold", true, func(*wtx) error {
			close(parked)
			<-gate
			return nil
		})
	}()
	<-parked
	return func() { close(gate) }
}

// waitQueued waits until n requests are queued for the writer.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(s.reqs) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d operations queued", len(s.reqs), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBatchOperationsValidateInOrderAndFailAlone(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	batchesBefore := s.Stats().Batches

	release := holdWriter(t, s)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			_, errs[i] = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("e0"), Plan: []PlanBlock{step}})
		}(i)
	}
	waitQueued(t, s, 2)
	var panicErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		panicErr = s.submit(ctx, "boom", false, func(w *wtx) error {
			if _, err := w.ExecContext(w.ctx, `UPDATE meta SET opened_count = opened_count + 1000`); err != nil {
				return err
			}
			var m map[string]int
			m["x"] = 1 // panics after a write: the savepoint must undo the write
			return nil
		})
	}()
	waitQueued(t, s, 3)
	var markerErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, markerErr = s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("p"), Reason: "test"}})
	}()
	waitQueued(t, s, 4)
	release()
	wg.Wait()

	if st := s.Stats(); st.Batches-batchesBefore != 2 || st.MaxBatch < 4 {
		t.Fatalf("stats %+v (before %d): operations were not batched together", st, batchesBefore)
	}
	ok, competing := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case IsReason(err, ReasonCompetingIntent):
			competing++
		default:
			t.Errorf("CreateIntent: %v", err)
		}
	}
	if ok != 1 || competing != 1 {
		t.Fatalf("ok=%d competing=%d: the second intent did not see the first one's uncommitted row", ok, competing)
	}
	if panicErr == nil || !strings.Contains(panicErr.Error(), "panic") {
		t.Fatalf("panicking op: %v", panicErr)
	}
	var opened int
	if err := s.db.QueryRow(`SELECT opened_count FROM meta`).Scan(&opened); err != nil || opened != 1 {
		t.Fatalf("opened_count = %d (%v): the panicking op's write survived", opened, err)
	}
	if markerErr != nil {
		t.Fatalf("WriteMarkers in the same batch: %v", markerErr)
	}
	if ms, _ := s.Markers(ctx, sc.ID, dig("p")); len(ms) != 1 {
		t.Fatalf("marker not committed: %+v", ms)
	}
}

func TestCreateIntentValidation(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc, other := testScope(1), testScope(2)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	b := storeTurn(t, s, sc, 1, dig("e0"), dig("e1"), []PlanBlock{a})
	o := storeTurn(t, s, other, 1, dig("s0"), dig("o0"), nil)

	// Non-replayable observation.
	nid, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("e1")})
	if err != nil {
		t.Fatal(err)
	}
	nr, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: nid, EndDigest: dig("n0"),
		EnvelopeFP: dig("a"), PayloadFP: dig("b"), OutputHash: dig("c"), Payload: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerEndConflict, Digest: dig("e1"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name string
		req  CreateIntentRequest
		want Reason
	}{
		{"stale generation", CreateIntentRequest{Scope: sc, Generation: 7, StartDigest: dig("x1"), Plan: []PlanBlock{a}}, ReasonStaleGeneration},
		{"missing ancestor", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x2"), Plan: []PlanBlock{{ObservationID: 999, PayloadID: 1, EndDigest: dig("e0")}}}, ReasonMissingAncestor},
		{"other scope", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x3"), Plan: []PlanBlock{o}}, ReasonAncestorMismatch},
		{"changed end", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x4"), Plan: []PlanBlock{{ObservationID: a.ObservationID, PayloadID: a.PayloadID, EndDigest: dig("zz")}}}, ReasonAncestorMismatch},
		{"not replayable", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x5"), Plan: []PlanBlock{{ObservationID: nr.ObservationID, PayloadID: 1, EndDigest: dig("n0")}}}, ReasonNotReplayable},
		{"end conflict", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("x6"), Plan: []PlanBlock{a, b}}, ReasonEndConflict},
		{"bad digest", CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: "ABC"}, ReasonInvalidArgument},
		{"plan without generation", CreateIntentRequest{Scope: sc, StartDigest: dig("x7"), Plan: []PlanBlock{a}}, ReasonInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.CreateIntent(ctx, tc.req)
			if !IsReason(err, tc.want) {
				t.Fatalf("err = %v, want reason %s", err, tc.want)
			}
		})
	}
	// After advancing the generation, the old plan is stale.
	if n, err := s.AdvanceGenerations(ctx, sc.ID); err != nil || n != 1 {
		t.Fatalf("AdvanceGenerations: %d, %v", n, err)
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("y"), Plan: []PlanBlock{a}}); !IsReason(err, ReasonStaleGeneration) {
		t.Fatalf("after advance: %v", err)
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 2, StartDigest: dig("y"), Plan: []PlanBlock{a}}); !IsReason(err, ReasonStaleGeneration) {
		t.Fatalf("old-generation ancestor: %v", err)
	}
}

func TestCommitObservationOutcomesAndAncestry(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	b := storeTurn(t, s, sc, 1, dig("e0"), dig("e1"), []PlanBlock{a})

	cands, err := s.Candidates(ctx, sc.ID, dig("e1"))
	if err != nil || len(cands) != 1 {
		t.Fatalf("Candidates: %+v, %v", cands, err)
	}
	c := cands[0]
	if c.ID != b.ObservationID || len(c.PriorPlan) != 1 || c.PriorPlan[0] != a || !c.Replayable || c.Seq != 2 || c.Generation != 1 {
		t.Fatalf("candidate %+v", c)
	}
	var anc int64
	if err := s.db.QueryRow(`SELECT ancestor_id FROM dependencies WHERE kind='ancestry' AND observation_id = ?`, b.ObservationID).Scan(&anc); err != nil || anc != a.ObservationID {
		t.Fatalf("ancestry %d, %v", anc, err)
	}

	commit := func(end, out string) (CommitResult, error) {
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("e0")})
		if err != nil {
			return CommitResult{}, err
		}
		defer func() { _ = s.ResolveIntent(ctx, id) }()
		return s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end, EnvelopeFP: dig("env"),
			PayloadFP: dig("payload %s", out), OutputHash: out, Replayable: true, Payload: []byte(`[1]`)})
	}
	// Same end, same output: repeat.
	r, err := commit(dig("e1"), dig("out %s", dig("e1")))
	if err != nil || r.Outcome != OutcomeRepeat || r.ObservationID != b.ObservationID {
		t.Fatalf("repeat: %+v, %v", r, err)
	}
	// Same end, different output: end conflict, then conflicted.
	if r, err = commit(dig("e1"), dig("other")); err != nil || r.Outcome != OutcomeEndConflict {
		t.Fatalf("conflict: %+v, %v", r, err)
	}
	if r, err = commit(dig("e1"), dig("third")); err != nil || r.Outcome != OutcomeConflicted {
		t.Fatalf("conflicted: %+v, %v", r, err)
	}
	// Committing twice on one intent, or on a missing one, fails alone.
	id, _ := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("e5")})
	req := CommitObservationRequest{IntentID: id, EndDigest: dig("e6"), EnvelopeFP: dig("1"), PayloadFP: dig("2"), OutputHash: dig("3"), MoveToDelivery: true}
	if _, err := s.CommitObservation(ctx, req); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitObservation(ctx, req); !IsReason(err, ReasonIntentPhase) {
		t.Fatalf("second commit: %v", err)
	}
	if err := s.ResolveIntent(ctx, id); err != nil {
		t.Fatal(err)
	}
	if err := s.ResolveIntent(ctx, id); !IsReason(err, ReasonIntentMissing) {
		t.Fatalf("resolve twice: %v", err)
	}
	req.IntentID = id
	if _, err := s.CommitObservation(ctx, req); !IsReason(err, ReasonIntentMissing) {
		t.Fatalf("commit after resolve: %v", err)
	}
	if _, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: 1, EndDigest: dig("x"), EnvelopeFP: dig("1"), PayloadFP: dig("2"), OutputHash: dig("3"), Payload: []byte(`{`)}); !IsReason(err, ReasonInvalidArgument) {
		t.Fatalf("invalid JSON payload: %v", err)
	}
}

func TestPayloadLimitsAndHotCache(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/c.sqlite"
	s := openTest(t, path, Options{})
	sc := testScope(1)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)

	p1, err := s.Payload(ctx, a.PayloadID)
	if err != nil {
		t.Fatal(err)
	}
	if string(p1.Output) != `[{"type":"reasoning","id":"rs_1"}]` || p1.Size != int64(len(p1.Output)) {
		t.Fatalf("payload %+v", p1)
	}
	if s.cache.len() != 1 {
		t.Fatalf("payload not cached")
	}
	before := p1.TouchedAt
	if err := s.TouchPayloads(ctx, before.Add(time.Hour), a.PayloadID); err != nil {
		t.Fatal(err)
	}
	p2, err := s.Payload(ctx, a.PayloadID)
	if err != nil || !p2.TouchedAt.After(before) {
		t.Fatalf("touch not visible: %+v %v", p2, err)
	}
	// A changed row version is not served from the cache.
	if _, err := s.wconn.ExecContext(ctx, `UPDATE payloads SET output = '[2]', size = 3, row_version = row_version + 1 WHERE payload_id = ?`, a.PayloadID); err != nil {
		t.Fatal(err)
	}
	if p3, err := s.Payload(ctx, a.PayloadID); err != nil || string(p3.Output) != `[2]` {
		t.Fatalf("stale cache: %+v %v", p3, err)
	}
	if _, err := s.Payload(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing payload: %v", err)
	}
	// A stored plan count over the limit is refused before its JSON loads.
	b := storeTurn(t, s, sc, 1, dig("e0"), dig("e1"), []PlanBlock{a})
	if _, err := s.wconn.ExecContext(ctx, `UPDATE observations SET plan_count = 100000 WHERE observation_id = ?`, b.ObservationID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Candidates(ctx, sc.ID, dig("e1")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized plan: %v", err)
	}
	mustClose(t, s)

	// A smaller payload limit refuses the stored payload before loading it.
	s = openTest(t, path, Options{MaxPayloadBytes: 2})
	if _, err := s.Payload(ctx, a.PayloadID); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("oversized payload: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	mustClose(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: testScope(1), StartDigest: dig("s")}); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if _, err := s.Candidates(ctx, dig("a"), dig("b")); !errors.Is(err, ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
}

func TestCanceledBeforeApplied(t *testing.T) {
	s := openTest(t, "", Options{})
	release := holdWriter(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.WriteMarkers(ctx, testScope(1), []Marker{{Kind: MarkerStartPoison, Digest: dig("p"), Reason: "test"}})
		done <- err
	}()
	waitQueued(t, s, 1)
	cancel()
	release()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if ms, _ := s.Markers(context.Background(), testScope(1).ID, dig("p")); len(ms) != 0 {
		t.Fatalf("a canceled operation was applied: %+v", ms)
	}
}
