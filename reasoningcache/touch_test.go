package reasoningcache

import (
	"context"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// TestRetentionTouches: replaying a conversation's turns renews their
// payloads' retention (max(existing, now), in the intent's own commit); a
// request bypassed before planning (no session capacity) touches nothing.
func TestRetentionTouches(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{MaxConcurrent: 1})
	c := newConv(t, canonical.ShapeChat)
	conversation(t, e, c, mixedTurns[:3])
	oldest := func() time.Time {
		t.Helper()
		lc, err := e.store.Lifecycle(ctx)
		must(t, err)
		if lc.Payloads != 3 {
			t.Fatalf("%d payloads, want 3", lc.Payloads)
		}
		return lc.OldestTouch
	}
	stored := oldest()
	e.clk.Add(10 * 24 * time.Hour)

	// One session holds the only slot: the next request bypasses before
	// planning and must not touch the conversation's payloads.
	other := newConv(t, canonical.ShapeChat)
	other.user("another conversation")
	holder := e.prepare(other)
	c.user("question D")
	if s := e.prepare(c); s.Skip() != "capacity" {
		t.Fatalf("skip %q, want capacity", s.Skip())
	}
	if got := oldest(); !got.Equal(stored) {
		t.Fatalf("a bypassed request touched payloads: oldest touch %v, want %v", got, stored)
	}
	holder.Release(ctx)

	c.user("question E") // the bypass poisoned the position it started at
	s := e.prepare(c)
	if s.Replayed() != 3 {
		t.Fatalf("replayed %d, want 3", s.Replayed())
	}
	if got := oldest(); !got.Equal(e.clk.Now()) {
		t.Fatalf("after a replay of every turn the oldest touch is %v, want now (%v)", got, e.clk.Now())
	}
	s.Release(ctx)
}
