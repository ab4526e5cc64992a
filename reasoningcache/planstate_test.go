package reasoningcache

import (
	"context"
	"fmt"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// TestMarkersStopPlansOnLongHistories: a history with more turns than
// the plan state reads markers for has the markers at its plan's blocks
// read instead, and they stop the plan exactly as on a short history: an
// end conflict at turn 1 leaves the prefix of turn 0, a start poison at
// turn 0 leaves nothing.
func TestMarkersStopPlansOnLongHistories(t *testing.T) {
	for _, limit := range []int{planStateTurns, 1} {
		t.Run(fmt.Sprint("turns=", limit), func(t *testing.T) {
			defer func(old int) { planStateTurns = old }(planStateTurns)
			planStateTurns = limit
			e := newEnv(t, Config{})
			c := newConv(t, canonical.ShapeChat)
			for k := range 2 {
				c.user("q")
				e.runTurn(c, k, mixedTurns[k])
				c.assistant(k, mixedTurns[k])
				c.results(k, mixedTurns[k])
			}
			c.user("q2")
			ctx := context.Background()
			replayed := func(want int) {
				t.Helper()
				s := e.prepare(c)
				defer s.Release(ctx)
				if s.Replayed() != want {
					t.Fatalf("replayed %d, want %d (%s)", s.Replayed(), want, s.Skip())
				}
			}
			replayed(2)
			s := e.prepare(c)
			sc, d := s.scope, s.d
			s.Release(ctx)
			mark := func(kind, digest string) {
				t.Helper()
				_, err := e.store.WriteMarkers(ctx, sc, []ledger.Marker{{Kind: kind, Digest: digest, Reason: "test"}})
				must(t, err)
			}
			mark(ledger.MarkerEndConflict, d.Turns[1].EndDigest.String())
			replayed(1)
			mark(ledger.MarkerStartPoison, d.Turns[0].StartDigest.String())
			replayed(0)
		})
	}
}
