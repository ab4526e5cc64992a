package reasoningcache

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// logged prepares c's request with an observed logger and returns the
// session and the reason codes it logs so far (and later).
func (e *env) logged(c *conv) (*Session, *observer.ObservedLogs) {
	e.t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	r := c.request()
	r.Logger = zap.New(core)
	s, err := e.eng.Prepare(context.Background(), r)
	must(e.t, err)
	return s, logs
}

func reasons(logs *observer.ObservedLogs) []string {
	var out []string
	for _, en := range logs.All() {
		if r, ok := en.ContextMap()["reason"].(string); ok {
			out = append(out, r)
		}
	}
	return out
}

func wantReason(t *testing.T, logs *observer.ObservedLogs, code string) {
	t.Helper()
	if got := reasons(logs); !slices.Contains(got, code) {
		t.Fatalf("reasons %v, want %s", got, code)
	}
}

// wantPoisoned checks that the session logged reason and left exactly
// one marker at its start position, with that reason.
func (e *env) wantPoisoned(t *testing.T, s *Session, logs *observer.ObservedLogs, reason string) {
	t.Helper()
	wantReason(t, logs, reason)
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 1 || ms[0].Reason != reason {
		t.Fatalf("markers %+v, want one %s", ms, reason)
	}
}

// firstTurn records turn 0 of a new conversation and appends it.
func (e *env) firstTurn(tu turn) *conv {
	c := newConv(e.t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, tu)
	c.assistant(0, tu)
	c.results(0, tu)
	c.user("q2")
	return c
}

func TestReasonUnknownOutcome(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s, logs := e.logged(c)
	out := mixedTurns[0].outcome(0)
	out.Status = "failed"
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	e.wantPoisoned(t, s, logs, "unknown_outcome")
}

func TestReasonUnsupportedItem(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s, logs := e.logged(c)
	out := mixedTurns[0].outcome(0)
	out.Output = append(out.Output, json.RawMessage(`{"type":"web_search_call","id":"ws_1","status":"completed"}`))
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	wantReason(t, logs, "observed_unsupported_item")
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 0 {
		t.Fatal("replayed an output with an item the relay does not replay")
	}
	cands, err := e.store.Candidates(context.Background(), s.scope.ID, s.d.Turns[0].EndDigest.String())
	must(t, err)
	if len(cands) != 1 || cands[0].Replayable {
		t.Fatalf("candidates %+v, want one observation that is not replayable", cands)
	}
}

func TestReasonEmptyOutput(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s, logs := e.logged(c)
	out := turn{}.outcome(0) // reasoning only: nothing visible
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	wantReason(t, logs, "empty_output")
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 0 {
		t.Fatalf("an empty output poisoned its position: %+v", ms)
	}
	if in, _ := e.store.UnresolvedIntents(context.Background(), 10); len(in) != 0 {
		t.Fatal("the intent of a delivered empty output was not resolved")
	}
}

func TestReasonCallMismatch(t *testing.T) {
	e := newEnv(t, Config{})
	tu := mixedTurns[1] // text and two calls
	c := e.firstTurn(tu)
	// The translated input names other call ids than the history: the
	// original block would no longer be answered by the tool results.
	for i := c.blocks[0][0]; i < c.blocks[0][1]; i++ {
		c.input[i] = json.RawMessage(strings.ReplaceAll(string(c.input[i]), "call_0_", "call_x_"))
	}
	s, logs := e.logged(c)
	defer s.Release(context.Background())
	wantReason(t, logs, "call_mismatch")
	if s.Replayed() != 0 {
		t.Fatal("replayed a block whose call ids differ from the input's")
	}
}

func TestReasonReplayCapacity(t *testing.T) {
	e := newEnv(t, Config{EntryAllowance: 64 << 10})
	c := e.firstTurn(mixedTurns[0])
	// Leave room for the session itself but not for the replayed bytes.
	req := c.request()
	need := requestCharge(&req)
	hog := e.eng.acquire(e.eng.Stats().Capacity - need)
	if hog == nil {
		t.Fatal("could not take the rest of the budget")
	}
	defer hog.release()
	s, logs := e.logged(c)
	defer s.Release(context.Background())
	wantReason(t, logs, "replay_capacity")
	if s.Replayed() != 0 || !s.Dispatched() {
		t.Fatalf("replayed %d, dispatched %v: want observed without replay", s.Replayed(), s.Dispatched())
	}
	sameInput(t, s.Input(), c.input)
}

func TestReasonCommitFailed(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s, logs := e.logged(c)
	if err := s.Complete(cancelled(), mixedTurns[0].outcome(0)); err == nil {
		t.Fatal("Complete with a stalled writer reported success")
	}
	s.Delivered(context.Background())
	wantReason(t, logs, "commit_failed")
	wantReason(t, logs, "position_poisoned")
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 1 || ms[0].Kind != ledger.MarkerStartPoison || ms[0].Reason != "commit_failed" {
		t.Fatalf("markers %+v", ms)
	}
}

// TestReasonRecordExceeded: a stream whose record stopped at the entry
// allowance has no known output; its position is poisoned.
func TestReasonRecordExceeded(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s, logs := e.logged(c)
	out := mixedTurns[0].outcome(0)
	out.Output, out.RecordExceeded = nil, true
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	e.wantPoisoned(t, s, logs, "record_over_budget")
}
