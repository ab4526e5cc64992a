package reasoningcache

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func TestReplaySurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.sqlite")
	st, err := ledger.Open(path, ledger.Options{})
	must(t, err)
	eng, err := New(st, Config{})
	must(t, err)
	e := &env{t: t, store: st, eng: eng, clk: newClock()}
	c := newConv(t, canonical.ShapeResponses)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[1])
	c.assistant(0, mixedTurns[1])
	c.results(0, mixedTurns[1])
	c.user("q2")
	inflight := e.prepare(c) // the process dies with this one unresolved
	if inflight.Replayed() != 1 {
		t.Fatalf("before restart: replayed %d", inflight.Replayed())
	}
	must(t, st.Close())

	st, err = ledger.Open(path, ledger.Options{})
	must(t, err)
	defer st.Close()
	eng, err = New(st, Config{})
	must(t, err)
	e = &env{t: t, store: st, eng: eng, clk: newClock()}
	// The interrupted request's position was poisoned at startup; a retry
	// there still replays the earlier block and is observed...
	if s := e.prepare(c); s.Skip() != "" || s.Replayed() != 1 || !s.Dispatched() {
		t.Fatalf("retry after restart: skip %q replayed %d", s.Skip(), s.Replayed())
	} else {
		ms, err := st.Markers(context.Background(), s.scope.ID, s.start)
		must(t, err)
		if len(ms) != 1 || ms[0].Reason != "unresolved_at_startup" {
			t.Fatalf("markers at the interrupted position: %+v", ms)
		}
		s.Release(context.Background())
	}
	// ...but the conversation goes on with its earlier block replayed.
	c.assistant(1, mixedTurns[0])
	c.outputs[1] = nil // turn 1 never completed here: the client wrote it itself
	c.user("q3")
	s := e.prepare(c)
	if s.Replayed() != 0 {
		// Block 1 has no observation, so nothing beneath it may be replayed.
		t.Fatalf("replayed %d beneath an unknown block", s.Replayed())
	}
	s.Release(context.Background())

	c2 := newConv(t, canonical.ShapeResponses)
	c2.user("q1")
	c2.assistant(0, mixedTurns[1])
	c2.results(0, mixedTurns[1])
	c2.user("other q2")
	s = e.prepare(c2)
	if s.Replayed() != 1 {
		t.Fatalf("after restart: replayed %d, want 1", s.Replayed())
	}
	sameInput(t, s.Input(), c2.want(0))
	s.Release(context.Background())
}

func TestPrefixOfAncestryOnConflict(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	for k := range 2 {
		c.user("q")
		e.runTurn(c, k, mixedTurns[k])
		c.assistant(k, mixedTurns[k])
		c.results(k, mixedTurns[k])
	}
	c.user("q2")
	s := e.prepare(c)
	if s.Replayed() != 2 {
		t.Fatalf("replayed %d, want 2", s.Replayed())
	}
	s.Release(context.Background())
	// Block 1 becomes ambiguous: block 0 alone is still a recorded
	// ancestry (block 1 was generated with it).
	_, err := e.store.WriteMarkers(context.Background(), s.scope, []ledger.Marker{{Kind: ledger.MarkerEndConflict, Digest: s.d.Turns[1].EndDigest.String(), Reason: "test"}})
	must(t, err)
	s = e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d, want the prefix of 1", s.Replayed())
	}
	sameInput(t, s.Input(), c.want(0))
	must(t, s.Complete(context.Background(), mixedTurns[2].outcome(2)))
	s.Delivered(context.Background())
	c.assistant(2, mixedTurns[2])
	c.results(2, mixedTurns[2])
	c.user("q3")
	// Block 2 was generated with block 0 replayed and block 1 as sent: that
	// is exactly what is replayed now.
	s = e.prepare(c)
	if s.Replayed() != 2 {
		t.Fatalf("replayed %d, want 2", s.Replayed())
	}
	sameInput(t, s.Input(), c.want(0, 2))
	s.Release(context.Background())
}

func TestBudgetsKeepAPrefix(t *testing.T) {
	size0 := int64(len(joinArray(mixedTurns[0].output(0))))
	for name, cfg := range map[string]Config{
		"max_plan_records": {MaxPlanBlocks: 1},
		"replay_ceiling":   {ReplayCeiling: size0 + 10},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, cfg)
			c := newConv(t, canonical.ShapeChat)
			for k := range 2 {
				c.user("q")
				e.runTurn(c, k, mixedTurns[k])
				c.assistant(k, mixedTurns[k])
				c.results(k, mixedTurns[k])
			}
			c.user("q2")
			s := e.prepare(c)
			defer s.Release(context.Background())
			if s.Replayed() != 1 {
				t.Fatalf("replayed %d, want 1", s.Replayed())
			}
			sameInput(t, s.Input(), c.want(0))
		})
	}
}
