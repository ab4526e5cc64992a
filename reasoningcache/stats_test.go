package reasoningcache

import (
	"context"
	"reflect"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

func TestCountersFollowAReplayedConversation(t *testing.T) {
	shared := new(Counters)
	e := newEnv(t, Config{Counters: shared})
	c := newConv(t, canonical.ShapeChat)
	conversation(t, e, c, mixedTurns[:3]) // turns replay 0, 1 and 2 blocks

	// a rejected replay resent without it
	c.user("question D")
	s := e.prepare(c)
	s.Rejected()
	if _, err := s.DropReplay(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Release(context.Background())

	// an interrupted response poisons its position
	c.user("question E")
	s = e.prepare(c)
	s.Abandon(context.Background(), "stream_interrupted")

	v := e.eng.Counters().Values()
	if e.eng.Counters() != shared {
		t.Fatal("the engine does not count into Config.Counters")
	}
	// turns B and C replay 1 and 2 blocks; D replays 3, is rejected
	// (3 end conflicts) and resent; E finds those turns conflicted
	want := CounterValues{
		Requests: 5, FullCache: 5, ReplayPlans: 3, ReplayedBlocks: 1 + 2 + 3,
		ReplaySuccesses: 2, ReplayRejections: 1, ReplayResends: 1, Conflicts: 3, Poisons: 1,
		Observations: 3, Payloads: 3, PayloadBytes: v.PayloadBytes,
		Bypasses: map[string]int64{}, PoisonsByReason: map[string]int64{},
	}
	for _, r := range BypassReasons {
		want.Bypasses[r] = 0
	}
	for _, r := range PoisonReasons {
		want.PoisonsByReason[r] = 0
	}
	want.PoisonsByReason["interrupted"] = 1
	if v.PayloadBytes <= 0 {
		t.Fatalf("payload_bytes %d", v.PayloadBytes)
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("counters\n got %+v\nwant %+v", v, want)
	}
}

func TestBypassReasonsAreAFixedSet(t *testing.T) {
	for skip, want := range map[string]string{
		"refused_too_deep": "refused", "capacity": "capacity", "start_poisoned": "start_poisoned",
		"something_new": "other", "": "other",
	} {
		if got := BypassReasons[bypassIndex(skip)]; got != want {
			t.Errorf("bypass %q counted as %q, want %q", skip, got, want)
		}
	}
}
