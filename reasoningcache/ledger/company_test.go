package ledger

import (
	"context"
	"testing"
	"time"
)

// holdQueued sets the writer's hold of queued operations for one test.
func holdQueued(t *testing.T, d time.Duration) {
	t.Helper()
	old := queuedCommitDelay
	queuedCommitDelay = d
	t.Cleanup(func() { queuedCommitDelay = old })
}

// TestQueuedResolveRidesTheNextCommit: a queued resolve is held for the
// next write and committed in its transaction, before it: the next
// request's intent at the same start replays its plan, and the two cost
// one commit.
func TestQueuedResolveRidesTheNextCommit(t *testing.T) {
	holdQueued(t, time.Minute) // the test never waits for it: company arrives
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 0, dig("s1"), dig("e1"), nil)
	req := CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("s2"), Plan: []PlanBlock{step}}
	id, err := s.CreateIntent(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Stats().Batches
	wait := s.ResolveIntentQueued(ctx, id)
	next, err := s.CreateIntent(ctx, req)
	if err != nil {
		t.Fatalf("CreateIntent after a queued resolve: %v", err)
	}
	if err := wait(); err != nil {
		t.Fatalf("queued resolve: %v", err)
	}
	if n := s.Stats().Batches - before; n != 1 {
		t.Fatalf("the resolve and the next intent took %d commits, want 1", n)
	}
	if err := s.ResolveIntent(ctx, id); !IsReason(err, ReasonIntentMissing) {
		t.Fatalf("the queued resolve did not remove its intent: %v", err)
	}
	// A resolve that waits is not held.
	done := make(chan error, 1)
	go func() { done <- s.ResolveIntent(ctx, next) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ResolveIntent was held for company")
	}
}

// TestQueuedResolveAlone: without company a queued resolve or poison
// commits once the hold ends.
func TestQueuedResolveAlone(t *testing.T) {
	holdQueued(t, 10*time.Millisecond)
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	a, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("a")})
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("b")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.ResolveIntentQueued(ctx, a)(); err != nil {
		t.Fatal(err)
	}
	if err := s.PoisonIntentQueued(ctx, b, "test_abandoned")(); err != nil {
		t.Fatal(err)
	}
	var intents, poisons int
	if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM intents), (SELECT count(*) FROM markers WHERE intent_id = ?)`, b).Scan(&intents, &poisons); err != nil {
		t.Fatal(err)
	}
	if intents != 0 || poisons != 1 {
		t.Fatalf("%d intents left, %d poison markers of the poisoned one; want 0 and 1", intents, poisons)
	}
}

// TestQueuedResolveAtClose: Close commits a held resolve instead of
// leaving its intent for recovery to poison.
func TestQueuedResolveAtClose(t *testing.T) {
	holdQueued(t, time.Hour)
	ctx := context.Background()
	path := t.TempDir() + "/c.sqlite"
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: testScope(1), StartDigest: dig("a")})
	if err != nil {
		t.Fatal(err)
	}
	wait := s.ResolveIntentQueued(ctx, id)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("held resolve at Close: %v", err)
	}
	s = openTest(t, path, Options{})
	var markers int
	if err := s.db.QueryRow(`SELECT count(*) FROM markers`).Scan(&markers); err != nil {
		t.Fatal(err)
	}
	if markers != 0 {
		t.Fatalf("recovery poisoned %d positions of a resolved intent", markers)
	}
}
