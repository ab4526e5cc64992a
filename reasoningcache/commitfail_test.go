package reasoningcache

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// cancelled is a context whose commits the ledger skips: the writer
// answers an operation whose context ended with that error, so it stands
// for a writer stalled past delivery_timeout.
func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

// TestUnrecordedOutcomeIsNeverResolvedClean is hole 1: a response whose
// observation (or poison) could not be committed is still delivered, but
// the session must not end with a clean resolve. Otherwise a regeneration
// at the same position with the same visible text and different reasoning
// is stored as the only record and replayed into the branch of the first
// answer, whose reasoning was never recorded.
func TestUnrecordedOutcomeIsNeverResolvedClean(t *testing.T) {
	first := turn{text: "The answer is 42.", seed: "first"}
	regen := turn{text: "The answer is 42.", seed: "regen"}
	for _, tc := range []struct {
		name string
		run  func(s *Session) // ends the first request
	}{
		{"observation commit fails", func(s *Session) {
			if err := s.Complete(cancelled(), first.outcome(0)); err == nil {
				t.Fatal("Complete with a stalled writer reported success")
			}
			s.Delivered(context.Background())
		}},
		{"poison commit fails", func(s *Session) {
			out := first.outcome(0)
			out.Sent.Content = "something else" // projection mismatch: poison
			if err := s.Complete(cancelled(), out); err == nil {
				t.Fatal("Complete with a stalled writer reported success")
			}
			s.Delivered(context.Background())
		}},
		{"commit fails, then delivery fails before a byte", func(s *Session) {
			if err := s.Complete(cancelled(), first.outcome(0)); err == nil {
				t.Fatal("Complete with a stalled writer reported success")
			}
			s.Release(context.Background())
		}},
		{"delivered without Complete", func(s *Session) {
			s.Delivered(context.Background())
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			c := newConv(t, canonical.ShapeChat)
			c.user("q1")
			s := e.prepare(c)
			if !s.Dispatched() {
				t.Fatalf("not dispatched: %s", s.Skip())
			}
			tc.run(s)
			// The position is poisoned (or, if even that failed, the
			// intent would still be unresolved): never clean.
			ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
			must(t, err)
			if len(ms) == 0 {
				t.Fatal("the unrecorded outcome left its position clean")
			}
			// A regeneration at the same position, same text, other
			// reasoning.
			e.prepareComplete(c, regen.outcome(0))
			// The client continues the FIRST answer's branch.
			c.assistant(0, first)
			c.user("q2")
			s = e.prepare(c)
			defer s.Release(context.Background())
			if s.Replayed() != 0 {
				t.Fatalf("replayed %d blocks into a branch whose reasoning was never recorded", s.Replayed())
			}
		})
	}
}

// TestCommitFailureThatCannotPoisonLeavesTheIntent: when neither the
// observation nor the poison can be committed, the intent stays
// unresolved, so Sweep (or the next startup) poisons it.
func TestCommitFailureThatCannotPoisonLeavesTheIntent(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s := e.prepare(c)
	if err := s.Complete(cancelled(), mixedTurns[0].outcome(0)); err == nil {
		t.Fatal("Complete with a stalled writer reported success")
	}
	s.Delivered(cancelled())
	in, err := e.store.UnresolvedIntents(context.Background(), 10)
	must(t, err)
	if len(in) != 1 {
		t.Fatalf("%d unresolved intents, want the one whose outcome is unknown", len(in))
	}
	e.clk.Add(DefaultIntentTimeout + time.Minute)
	must(t, e.eng.Sweep(context.Background()))
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) == 0 {
		t.Fatal("the sweep did not poison the unrecorded position")
	}
}

// TestEntryAllowanceAboveLedgerLimitIsRefused is hole 2: an allowance the
// ledger could never store is a configuration error, in Validate (what
// the app calls at provisioning) and in New, also against a store opened
// with a smaller payload limit.
func TestEntryAllowanceAboveLedgerLimitIsRefused(t *testing.T) {
	cfg := Config{EntryAllowance: ledger.DefaultMaxPayloadBytes + 1, MemoryBudget: 1 << 30}
	if err := cfg.Check(); err == nil || !strings.Contains(err.Error(), "entry_allowance") {
		t.Fatalf("Validate: %v", err)
	}
	st, err := ledger.Open(filepath.Join(t.TempDir(), "c.sqlite"), ledger.Options{MaxPayloadBytes: 1 << 20})
	must(t, err)
	defer st.Close()
	if _, err := New(st, Config{EntryAllowance: 2 << 20}); err == nil {
		t.Fatal("New accepted an entry allowance above the store's payload limit")
	}
	if _, err := New(st, Config{EntryAllowance: 1 << 20}); err != nil {
		t.Fatalf("New refused an allowance at the limit: %v", err)
	}
}

// TestOverBudgetOutputIsObservedNotAdmitted: an output larger than the
// entry allowance is observed (its visible identity recorded) and only its
// payload is not admitted, so a regeneration with different reasoning at
// the same end becomes a conflict instead of a unique record.
func TestOverBudgetOutputIsObservedNotAdmitted(t *testing.T) {
	e := newEnv(t, Config{EntryAllowance: 2 << 10})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	big := turn{text: strings.Repeat("long answer ", 400), seed: "big"}
	s := e.prepareComplete(c, big.outcome(0))
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 0 {
		t.Fatalf("an over-budget output poisoned its position: %+v", ms)
	}
	c.assistant(0, big)
	c.user("q2")
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 0 {
		t.Fatal("replayed an output over the entry allowance")
	}
	cands, err := e.store.Candidates(context.Background(), s.scope.ID, s.d.Turns[0].EndDigest.String())
	must(t, err)
	if len(cands) != 1 || cands[0].Replayable || cands[0].PayloadID != 0 {
		t.Fatalf("candidates %+v, want one observation without payload", cands)
	}
}
