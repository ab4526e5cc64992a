package ledger

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestBatchFullFailsAlone: an operation of a group-commit batch that hits
// SQLITE_FULL fails alone, with that error, and the other operations of
// its batch commit. A new scope's row under a tiny max_page_count makes
// SQLite roll back the whole transaction; before the fix the savepoint
// rollback then failed with "no such savepoint", and every operation of
// the batch failed with that error instead of its own.
func TestBatchFullFailsAlone(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	intent, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("start")})
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+4)); err != nil {
		t.Fatal(err)
	}

	release := holdWriter(t, s)
	ops := []func() error{
		func() error {
			_, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("m1"), Reason: "test"}})
			return err
		},
		func() error {
			_, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: intent, EndDigest: dig("end"),
				EnvelopeFP: dig("env"), PayloadFP: dig("pay"), OutputHash: dig("out"), Replayable: true,
				Payload: []byte(`"small"`)})
			return err
		},
		func() error {
			_, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("m2"), Reason: "test"}})
			return err
		},
		// Too big for the pages left. Last, because it still fails after
		// the reserve is released, which latches the guard: what follows
		// it would be refused as guarded (TestGuardLatchesAfterFailedRetry).
		func() error {
			var ms []Marker
			for k := 0; k < 200; k++ {
				ms = append(ms, Marker{Kind: MarkerStartPoison, Digest: dig("big %d", k), Reason: strings.Repeat("r", 60)})
			}
			_, err := s.WriteMarkers(ctx, testScope(2), ms)
			return err
		},
	}
	errs := make([]chan error, len(ops))
	for i, op := range ops {
		errs[i] = make(chan error, 1)
		go func() { errs[i] <- op() }()
		waitQueued(t, s, i+1)
	}
	batchesBefore := s.Stats().Batches
	release()
	got := make([]error, len(ops))
	for i := range errs {
		got[i] = <-errs[i]
	}
	if s.Stats().Batches == batchesBefore {
		t.Fatal("no batch ran")
	}
	for _, i := range []int{0, 1, 2} {
		if got[i] != nil {
			t.Errorf("operation %d failed with its batch: %v", i, got[i])
		}
	}
	if got[3] == nil {
		t.Fatal("the oversized operation succeeded under max_page_count")
	}
	if msg := got[3].Error(); !strings.Contains(msg, "full") || strings.Contains(msg, "savepoint") {
		t.Fatalf("oversized operation failed with %q, want its own SQLITE_FULL error", msg)
	}
	if !isCapacityError(got[3]) {
		t.Fatalf("%v is not classified as a capacity error", got[3])
	}
	ms, err := s.MarkersAt(ctx, sc.ID, []string{dig("m1"), dig("m2")})
	if err != nil || len(ms) != 2 {
		t.Fatalf("markers after the batch: %d, %v; want 2", len(ms), err)
	}
	if ms, _ := s.MarkersAt(ctx, testScope(2).ID, []string{dig("big 0")}); len(ms) != 0 {
		t.Fatal("the failed operation left markers")
	}
}
