package ledger

import (
	"context"
	"testing"
	"time"
)

// TestCreateIntentWaitsForDelivery: a plan at a start where another
// intent is still delivering its recorded answer is dispatched once that
// intent's end is queued, instead of being refused (the client can send
// its next request, on another connection, before the end is queued); an
// intent still generating there refuses it at once, and one that never
// ends refuses it after DeliveryWait.
func TestCreateIntentWaitsForDelivery(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 0, dig("s1"), dig("e1"), nil)
	req := CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("s2"), Plan: []PlanBlock{step}}
	deliver := func() int64 {
		t.Helper()
		id, err := s.CreateIntent(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.MoveToDelivery(ctx, id, dig("e2")); err != nil {
			t.Fatal(err)
		}
		return id
	}

	deliveryWait = time.Minute // never reached: the end is queued
	t.Cleanup(func() { deliveryWait, testHookDeliveryWait = DeliveryWait, nil })
	prev := deliver()
	refused := make(chan struct{})
	testHookDeliveryWait = func() { close(refused) }
	ended := make(chan error, 1)
	go func() {
		<-refused // the next request overtook the end of this one
		ended <- s.ResolveIntentQueued(ctx, prev)()
	}()
	next, err := s.CreateIntent(ctx, req)
	if err != nil {
		t.Fatalf("CreateIntent while the previous answer was delivering: %v", err)
	}
	if err := <-ended; err != nil {
		t.Fatal(err)
	}

	// next is still dispatching: refused without waiting for it
	if _, err := s.CreateIntent(ctx, req); !IsReason(err, ReasonCompetingIntent) {
		t.Fatalf("a plan beside a dispatching intent: %v, want competing_intent", err)
	}
	if err := s.MoveToDelivery(ctx, next, dig("e2")); err != nil {
		t.Fatal(err)
	}
	deliveryWait, testHookDeliveryWait = 10*time.Millisecond, nil
	// delivering and never ended: refused once the wait is over
	if _, err := s.CreateIntent(ctx, req); !IsReason(err, ReasonCompetingIntent) {
		t.Fatalf("a plan beside an intent that never ends: %v, want competing_intent", err)
	}
}
