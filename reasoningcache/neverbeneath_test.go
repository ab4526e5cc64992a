package reasoningcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// fork copies a conversation so that it can be continued on its own (an
// edit: the client goes back and sends something else from there).
func (c *conv) fork() *conv {
	d := *c
	d.history, d.spans, d.input = clone(c.history), clone(c.spans), clone(c.input)
	d.blocks, d.outputs = clone(c.blocks), clone(c.outputs)
	return &d
}

// neverBeneath checks one prepared request against the never-beneath
// rule and against the client's own branch:
//   - a replayed plan is exactly a plan dispatched before (recorded in
//     dispatched), extended by the record that plan produced;
//   - every replayed block carries the original output that produced the
//     client's visible block at that place, never another generation's.
func neverBeneath(t *testing.T, e *env, c *conv, s *Session, dispatched map[string]bool) {
	t.Helper()
	s.mu.Lock()
	plan := clone(s.plan)
	s.mu.Unlock()
	if s.Dispatched() {
		dispatched[planKey(plan)] = true
	}
	if len(plan) == 0 {
		sameInput(t, s.Input(), c.input)
		return
	}
	last := plan[len(plan)-1]
	cands, err := e.store.Candidates(context.Background(), s.scope.ID, last.EndDigest)
	must(t, err)
	i := slices.IndexFunc(cands, func(o ledger.Observation) bool { return o.ID == last.ObservationID })
	if i < 0 {
		t.Fatalf("the plan's last step %d is not a record at its end", last.ObservationID)
	}
	prior := cands[i].PriorPlan
	if !slices.Equal(prior, plan[:len(plan)-1]) {
		t.Fatalf("replayed plan %s is not its record's dispatched plan %s extended by the record", planKey(plan), planKey(prior))
	}
	if !dispatched[planKey(prior)] {
		t.Fatalf("the record's prior plan %s was never dispatched", planKey(prior))
	}
	var blocks []int
	for _, st := range plan {
		bi := slices.IndexFunc(s.d.Turns, func(b canonical.Turn) bool { return b.EndDigest.String() == st.EndDigest })
		if bi < 0 {
			t.Fatalf("step %d ends at no block of the history", st.ObservationID)
		}
		blocks = append(blocks, bi)
	}
	sameInput(t, s.Input(), c.want(blocks...))
}

func planKey(p []ledger.PlanBlock) string {
	k := ""
	for _, st := range p {
		k += fmt.Sprintf("%d/%d/%.8s;", st.ObservationID, st.PayloadID, st.EndDigest)
	}
	return k
}

// TestNeverBeneathProperty runs random conversations with stops (before
// and after the answer completed), retries, edits and regenerations with
// the same or another visible text, in one scope where conversations
// share prefixes, and checks every request with neverBeneath. It prints
// how many earlier blocks were replayed. RELAY_PROPERTY_ROUNDS=n runs n
// rounds (default 20).
func TestNeverBeneathProperty(t *testing.T) {
	rounds := 20
	if testing.Short() {
		rounds = 5
	}
	if n, err := strconv.Atoi(os.Getenv("RELAY_PROPERTY_ROUNDS")); err == nil && n > 0 {
		rounds = n // long campaigns by hand
	}
	texts := []string{"ok", "sure", "done"}
	asks := []string{"q-a", "q-b", "q-c"}
	var eligible, replayed int
	for seed := range rounds {
		rng := rand.New(rand.NewPCG(uint64(seed), 11))
		e := newEnv(t, Config{})
		dispatched := map[string]bool{"": true}
		branches := []*conv{newConv(t, canonical.ShapeChat)}
		gen := 0
		answer := func() turn {
			gen++
			return turn{text: texts[rng.IntN(len(texts))], seed: fmt.Sprintf("g%d", gen)}
		}
		run := func(c *conv) *Session {
			s := e.prepare(c)
			neverBeneath(t, e, c, s, dispatched)
			eligible += len(c.blocks)
			replayed += s.Replayed()
			return s
		}
		for range 25 {
			c := branches[rng.IntN(len(branches))].fork()
			c.user(asks[rng.IntN(len(asks))])
			k := len(c.blocks)
			ctx := context.Background()
			s := run(c)
			tu := answer()
			switch r := rng.IntN(20); {
			case r < 3: // stopped mid-stream, then retried
				s.Abandon(ctx, "client_gone")
				s = run(c)
				must(t, s.Complete(ctx, tu.outcome(k)))
				s.Delivered(ctx)
			case r < 4: // stopped after the answer was recorded, then retried
				must(t, s.Complete(ctx, tu.outcome(k)))
				s.Abandon(ctx, "delivery_failed")
				tu = answer()
				s = run(c)
				must(t, s.Complete(ctx, tu.outcome(k)))
				s.Delivered(ctx)
			case r < 7: // regenerated; the client keeps one of the two
				must(t, s.Complete(ctx, tu.outcome(k)))
				s.Delivered(ctx)
				other := answer()
				s = run(c)
				must(t, s.Complete(ctx, other.outcome(k)))
				s.Delivered(ctx)
				if rng.IntN(2) == 0 {
					tu = other
				}
			default:
				must(t, s.Complete(ctx, tu.outcome(k)))
				s.Delivered(ctx)
			}
			c.assistant(k, tu)
			branches = append(branches, c)
		}
	}
	t.Logf("never-beneath property: %d rounds, %d of %d earlier blocks replayed", rounds, replayed, eligible)
}

// TestStoppedAnswerCostsOneTurn: in an 8-turn conversation whose third
// answer is stopped mid-stream and retried, every turn replays every
// earlier block except the stopped position's.
func TestStoppedAnswerCostsOneTurn(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	ctx := context.Background()
	const stopped = 2
	for k := range 8 {
		c.user(fmt.Sprintf("question %d", k))
		s := e.prepare(c)
		if k == stopped {
			s.Abandon(ctx, "client_gone")
			s = e.prepare(c)
		}
		var want []int
		for b := range k {
			if b != stopped {
				want = append(want, b)
			}
		}
		if s.Replayed() != len(want) {
			t.Fatalf("turn %d: replayed %d blocks, want %d", k, s.Replayed(), len(want))
		}
		sameInput(t, s.Input(), c.want(want...))
		tu := turn{text: fmt.Sprintf("answer %d", k), seed: "s"}
		must(t, s.Complete(ctx, tu.outcome(k)))
		s.Delivered(ctx)
		c.assistant(k, tu)
	}
}

// TestModelRefusalPoisonsOnlyItsTurn: a refusal is not observed but
// poisons its position (how a client sends a refusal back is not known, so
// its identity is not known: the design's rule for an unknown prediction),
// and costs only that turn.
func TestModelRefusalPoisonsOnlyItsTurn(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	ctx := context.Background()
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	out := turn{}.outcome(1)
	out.Output = append(out.Output, []byte(`{"type":"message","id":"msg_r","role":"assistant","status":"completed","content":[{"type":"refusal","refusal":"I can't help with that."}]}`))
	out.Sent.Refusal = "I can't help with that."
	s := e.prepare(c)
	must(t, s.Complete(ctx, out))
	s.Delivered(ctx)
	ms, err := e.store.Markers(ctx, s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 1 || ms[0].Reason != "refusal_unpredictable" {
		t.Fatalf("markers %+v, want refusal_unpredictable", ms)
	}
	s = e.prepare(c) // the user retries
	defer s.Release(ctx)
	if s.Replayed() != 1 || !s.Dispatched() {
		t.Fatalf("retry after a refusal: replayed %d, dispatched %v", s.Replayed(), s.Dispatched())
	}
}
