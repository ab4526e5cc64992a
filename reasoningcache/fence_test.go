package reasoningcache

import (
	"context"
	"errors"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// TestFence: traffic the cache cannot observe fences the matching scopes:
// their unresolved positions are poisoned and their generations advance,
// so nothing recorded before is replayed; other models and (when the
// caller is known) other callers keep their records.
func TestFence(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, Config{})
	start := func(model, caller string) *conv {
		c := newConv(t, canonical.ShapeChat)
		c.scope.Model, c.scope.Caller = model, caller
		c.user("q1")
		e.runTurn(c, 0, mixedTurns[0])
		c.assistant(0, mixedTurns[0])
		c.user("q2")
		return c
	}
	alice, bob, other := start("gpt-5.2", "alice"), start("gpt-5.2", "bob"), start("gpt-5.3", "alice")
	replays := func(c *conv) int {
		s := e.prepare(c)
		defer s.Release(ctx)
		return s.Replayed()
	}
	inflight := e.prepare(alice) // a generation running across the fence
	if inflight.Replayed() != 1 {
		t.Fatalf("before the fence: replayed %d", inflight.Replayed())
	}

	must(t, e.eng.Fence(ctx, "gpt-5.2", "alice", true, nil))
	ms, err := e.store.Markers(ctx, inflight.scope.ID, inflight.start)
	must(t, err)
	if len(ms) != 1 || ms[0].Reason != "unobserved_traffic" {
		t.Fatalf("the in-flight position was not poisoned: %+v", ms)
	}
	inflight.Release(ctx)
	if n := replays(alice); n != 0 {
		t.Fatalf("alice replayed %d after the fence", n)
	}
	if replays(bob) != 1 || replays(other) != 1 {
		t.Fatal("the fence reached another caller's or another model's scope")
	}

	// Caller unknown: every caller of the model.
	must(t, e.eng.Fence(ctx, "gpt-5.2", "", false, nil))
	if n := replays(bob); n != 0 {
		t.Fatalf("bob replayed %d after a fence of every caller", n)
	}
	if replays(other) != 1 {
		t.Fatal("the fence reached another model")
	}
	// Model unknown: every scope.
	must(t, e.eng.Fence(ctx, "", "", false, nil))
	if n := replays(other); n != 0 {
		t.Fatalf("replayed %d after a fence of every model", n)
	}

	must(t, e.store.Close())
	if err := e.eng.Fence(ctx, "gpt-5.2", "", false, nil); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("fence on a closed ledger: %v, want ErrUnavailable", err)
	}
}
