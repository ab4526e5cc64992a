package ledger

import (
	"context"
	"testing"
	"time"
)

func touchedAt(t *testing.T, s *Store, payloadID int64) int64 {
	t.Helper()
	var at int64
	if err := s.db.QueryRow(`SELECT touched_at FROM payloads WHERE payload_id = ?`, payloadID).Scan(&at); err != nil {
		t.Fatal(err)
	}
	return at
}

// TestCoarseTouchKeepsUsedPayloads: a replay within TouchGranularity of a
// payload's last written touch leaves its row alone, a later one writes
// the touch, and cleanup keeps a payload until Retention has passed since
// its last use even when that use was not written.
func TestCoarseTouchKeepsUsedPayloads(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	sc := testScope(1)
	turn := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	written := touchedAt(t, s, turn.PayloadID)
	replay := func(start string) {
		t.Helper()
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("%s", start), Plan: []PlanBlock{turn}})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.ResolveIntent(ctx, id); err != nil {
			t.Fatal(err)
		}
	}

	clk.advance(s, TouchGranularity-time.Millisecond)
	used := clk.Now()
	replay("s1")
	if got := touchedAt(t, s, turn.PayloadID); got != written {
		t.Fatalf("a replay %s after the last touch wrote touched_at %d, want it left at %d", TouchGranularity-time.Millisecond, got, written)
	}
	clk.advance(s, TouchGranularity)
	replay("s2")
	if got := touchedAt(t, s, turn.PayloadID); got != clk.Now().UnixMilli() {
		t.Fatalf("a replay %s after the last touch left touched_at %d, want now (%d)", 2*TouchGranularity, got, clk.Now().UnixMilli())
	}

	// The same, and then left idle: the unwritten use still counts.
	clk.advance(s, TouchGranularity-time.Millisecond)
	used = clk.Now()
	replay("s3")
	if res := mustCleanup(t, s); res.Deleted != 0 {
		t.Fatalf("cleanup right after a use: %+v", res)
	}
	clk.advance(s, DefaultRetention-time.Millisecond)
	if res := mustCleanup(t, s); res.Blocked || res.Deleted != 0 {
		t.Fatalf("cleanup %s after the last use (its touch not written): %+v, want nothing deleted", clk.Now().Sub(used), res)
	}
	clk.advance(s, TouchGranularity)
	if res := mustCleanup(t, s); res.Deleted != 1 {
		t.Fatalf("cleanup %s after the last use: %+v, want the payload deleted", clk.Now().Sub(used), res)
	}
}

// TestCoarseTouchOfFlushedNotes: the planner's batched touches follow the
// same granularity: written once the last touch is more than
// TouchGranularity old.
func TestCoarseTouchOfFlushedNotes(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	turn := storeTurn(t, s, testScope(1), 1, dig("s0"), dig("e0"), nil)
	written := touchedAt(t, s, turn.PayloadID)
	clk.advance(s, TouchGranularity)
	s.NoteTouched(turn.PayloadID)
	if err := s.flushTouches(ctx); err != nil {
		t.Fatal(err)
	}
	if got := touchedAt(t, s, turn.PayloadID); got != written {
		t.Fatalf("touched_at %d, want %d", got, written)
	}
	clk.advance(s, time.Millisecond)
	s.NoteTouched(turn.PayloadID)
	if err := s.flushTouches(ctx); err != nil {
		t.Fatal(err)
	}
	if got := touchedAt(t, s, turn.PayloadID); got != clk.Now().UnixMilli() {
		t.Fatalf("touched_at %d, want now (%d)", got, clk.Now().UnixMilli())
	}
}
