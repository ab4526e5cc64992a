package ledger

import (
	"context"
	"testing"
)

// TestResolveIntentQueuedOrdersLaterWrites: a resolve that has been queued
// but not waited for is applied before any write submitted after it, so a
// request repeated at the same position right after a delivered answer
// can still dispatch its replay plan (a plan is refused while another
// intent is unresolved at its start).
func TestResolveIntentQueuedOrdersLaterWrites(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 0, dig("s1"), dig("e1"), nil)
	req := CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("s2"), Plan: []PlanBlock{step}}
	for i := range 20 {
		id, err := s.CreateIntent(ctx, req)
		if err != nil {
			t.Fatalf("round %d: CreateIntent after a queued resolve: %v", i, err)
		}
		wait := s.ResolveIntentQueued(ctx, id)
		defer func() {
			if err := wait(); err != nil {
				t.Errorf("queued resolve: %v", err)
			}
		}()
	}
	id, err := s.CreateIntent(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// without the resolve the same plan at the same start competes
	if _, err := s.CreateIntent(ctx, req); !IsReason(err, ReasonCompetingIntent) {
		t.Fatalf("second unresolved intent at the start: %v, want competing_intent", err)
	}
	if err := s.PoisonIntentQueued(ctx, id, "test_abandoned")(); err != nil {
		t.Fatal(err)
	}
	if err := s.PoisonIntentQueued(ctx, id, "")(); !IsReason(err, ReasonInvalidArgument) {
		t.Fatalf("empty reason: %v", err)
	}
}
