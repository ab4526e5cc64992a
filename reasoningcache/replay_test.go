package reasoningcache

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// conversation runs turns 0..n-1 of a conversation, checking before each
// turn that every earlier block is replayed byte for byte.
func conversation(t *testing.T, e *env, c *conv, turns []turn) {
	t.Helper()
	for k, tu := range turns {
		c.user("question " + string(rune('A'+k)))
		s := e.prepare(c)
		if s.Skip() != "" {
			t.Fatalf("turn %d skipped: %s", k, s.Skip())
		}
		var all []int
		for b := range k {
			all = append(all, b)
		}
		if s.Replayed() != k {
			t.Fatalf("turn %d replayed %d blocks, want %d", k, s.Replayed(), k)
		}
		sameInput(t, s.Input(), c.want(all...))
		must(t, s.Complete(context.Background(), tu.outcome(k)))
		s.Delivered(context.Background())
		c.assistant(k, tu)
		c.results(k, tu)
	}
}

var mixedTurns = []turn{
	{text: "Hello! Let me look."},
	{text: "Reading two files.", calls: []call{{name: "read_file", args: `{"path":"a.go"}`}, {name: "read_file", args: `{"path":"b.go","lines":[1,20]}`}}},
	{calls: []call{{name: "grep", args: `{"pattern":"func <T>","n":3,"ratio":0.25}`}}},
	{text: "Applying the patch.", calls: []call{{name: "ApplyPatch", args: "*** Begin Patch\n*** End Patch", custom: true}}},
	{text: "Done: both files compile."},
}

func TestChatMultiTurnReplay(t *testing.T) {
	e := newEnv(t, Config{})
	conversation(t, e, newConv(t, canonical.ShapeChat), mixedTurns)
}

func TestResponsesShapeMultiTurnReplay(t *testing.T) {
	e := newEnv(t, Config{})
	conversation(t, e, newConv(t, canonical.ShapeResponses), mixedTurns)
}

func TestJavaScriptArgumentsAreReplayed(t *testing.T) {
	// The model spaces its arguments; the client sends them back compact.
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q")
	tu := turn{calls: []call{{name: "f", args: `{ "b": "x\/y", "a": [1, 2.5, "\u00e9"] }`}}}
	e.runTurn(c, 0, tu)
	// What a JavaScript client echoes: JSON.stringify(JSON.parse(args)).
	c.history = append(c.history, json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_0_0","type":"function","function":{"name":"f","arguments":"{\"b\":\"x/y\",\"a\":[1,2.5,\"é\"]}"}}]}`))
	c.spans = append(c.spans, [2]int{len(c.input), len(c.input) + 1})
	c.input = append(c.input, json.RawMessage(`{"type":"function_call","call_id":"call_0_0","name":"f","arguments":"{\"b\":\"x/y\",\"a\":[1,2.5,\"é\"]}"}`))
	c.blocks = append(c.blocks, [2]int{len(c.input) - 1, len(c.input)})
	c.outputs = append(c.outputs, tu.output(0))
	c.results(0, tu)
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d (skip %q), want 1", s.Replayed(), s.Skip())
	}
	sameInput(t, s.Input(), c.want(0))
	s.Release(context.Background())
}

func TestEditedHistoryIsNotReplayed(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	e.runTurn(c, 1, mixedTurns[1])
	c.assistant(1, mixedTurns[1])
	c.results(1, mixedTurns[1])

	// The client edits the first assistant message: nothing from it on
	// can be identified, so nothing is replayed (the second block's
	// prefix digest changed too).
	edited := *c
	edited.history = clone(c.history)
	edited.history[2] = json.RawMessage(`{"role":"assistant","content":"Hello! Let me look!"}`)
	s := e.prepare(&edited)
	if s.Replayed() != 0 {
		t.Fatalf("edited history replayed %d blocks", s.Replayed())
	}
	sameInput(t, s.Input(), c.input)
	s.Release(context.Background())

	// An edited user message before the blocks: no replay either.
	edited.history = clone(c.history)
	edited.history[1] = json.RawMessage(`{"role":"user","content":"q1 (edited)"}`)
	s = e.prepare(&edited)
	if s.Replayed() != 0 {
		t.Fatalf("edited user message replayed %d blocks", s.Replayed())
	}
	s.Release(context.Background())

	// The unedited history still replays both.
	s = e.prepare(c)
	if s.Replayed() != 2 {
		t.Fatalf("unedited history replayed %d blocks, want 2", s.Replayed())
	}
	s.Release(context.Background())
}

func TestRegenerationConflictAndRepeat(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	tu := turn{text: "Same visible text."}
	e.runTurn(c, 0, tu)
	// An identical regeneration (same payload) is a repeat: still replayable.
	e.runTurn(c, 0, tu)
	c.assistant(0, tu)
	c.user("q2")
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("after a repeat: replayed %d (skip %q), want 1", s.Replayed(), s.Skip())
	}
	s.Release(context.Background())

	// A regeneration with the same visible text but other reasoning: the
	// client's history no longer says which original it continues.
	c2 := newConv(t, canonical.ShapeChat)
	c2.user("q1")
	regen := turn{text: "Same visible text.", seed: "b"}
	e.runTurn(c2, 0, regen)
	s = e.prepare(c)
	if s.Replayed() != 0 {
		t.Fatalf("after an end conflict: replayed %d, want 0", s.Replayed())
	}
	s.Release(context.Background())
	ms, err := e.store.MarkersAt(context.Background(), s.scope.ID, []string{s.d.Turns[0].EndDigest.String()})
	must(t, err)
	if len(ms) != 1 || ms[0].Kind != ledger.MarkerEndConflict {
		t.Fatalf("markers %+v, want one end conflict", ms)
	}
}

func TestUnsafeNumbersAreNeverAdmitted(t *testing.T) {
	for _, args := range []string{`{"n":9007199254740993}`, `{"n":1.0}`, `{"n":1e3}`, `{"n":-0}`, `{"n":2.50}`, `{"1":"x"}`, `{"a":1,"a":2}`, `{"s":"\ud800"}`, `not json`} {
		t.Run(args, func(t *testing.T) {
			e := newEnv(t, Config{})
			c := newConv(t, canonical.ShapeChat)
			c.user("q1")
			tu := turn{calls: []call{{name: "f", args: args}}}
			s := e.prepare(c)
			must(t, s.Complete(context.Background(), tu.outcome(0)))
			s.Delivered(context.Background())
			// The position is poisoned and nothing was observed.
			ms, err := e.store.MarkersAt(context.Background(), s.scope.ID, []string{s.start})
			must(t, err)
			if len(ms) != 1 || ms[0].Kind != ledger.MarkerStartPoison || ms[0].Reason != "unsafe_arguments" {
				t.Fatalf("markers %+v, want start poison unsafe_arguments", ms)
			}
			c.assistant(0, tu)
			c.results(0, tu)
			s = e.prepare(c)
			if s.Replayed() != 0 {
				t.Fatalf("replayed %d", s.Replayed())
			}
			s.Release(context.Background())
		})
	}
}

func TestDoneCopyDrift(t *testing.T) {
	base := turn{text: "hi"}.output(0)
	reasoning := func(id, enc, summary string) json.RawMessage {
		return json.RawMessage(`{"type":"reasoning","id":"` + id + `","summary":[{"type":"summary_text","text":"` + summary +
			`"}],"encrypted_content":"` + enc + `","status":"completed"}`)
	}
	cases := []struct {
		name           string
		terminal, done json.RawMessage
		admit          bool
	}{
		{"identical", base[0], base[0], true},
		{"ciphertext bytes differ", reasoning("rs_0a", "gAAAA-terminal", "thinking 0"), reasoning("rs_0a", "gAAAA-done", "thinking 0"), true},
		{"ids differ", reasoning("rs_0a", "gAAAA-x", "thinking 0"), reasoning("rs_0b", "gAAAA-x", "thinking 0"), false},
		{"other field differs", reasoning("rs_0a", "gAAAA-x", "thinking 0"), reasoning("rs_0a", "gAAAA-x", "thinking 1"), false},
		{"empty terminal ciphertext", reasoning("rs_0a", "", "thinking 0"), reasoning("rs_0a", "gAAAA-x", "thinking 0"), false},
		{"empty done ciphertext", reasoning("rs_0a", "gAAAA-x", "thinking 0"), reasoning("rs_0a", "", "thinking 0"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			c := newConv(t, canonical.ShapeChat)
			c.user("q1")
			out := turn{text: "hi"}.outcome(0)
			out.Output = []json.RawMessage{tc.terminal, base[1]}
			out.DoneItems = []json.RawMessage{tc.done, base[1]}
			s := e.prepare(c)
			must(t, s.Complete(context.Background(), out))
			s.Delivered(context.Background())
			c.assistant(0, turn{text: "hi"})
			c.user("q2")
			s = e.prepare(c)
			defer s.Release(context.Background())
			if !tc.admit {
				if s.Replayed() != 0 {
					t.Fatalf("replayed a drifting record")
				}
				return
			}
			if s.Replayed() != 1 {
				t.Fatalf("replayed %d (skip %q), want 1", s.Replayed(), s.Skip())
			}
			// The terminal copy is what comes back, byte for byte.
			sameInput(t, s.Input()[c.blocks[0][0]:c.blocks[0][0]+2], out.Output)
		})
	}
	t.Run("other item differs", func(t *testing.T) {
		e := newEnv(t, Config{})
		c := newConv(t, canonical.ShapeChat)
		c.user("q1")
		out := turn{text: "hi"}.outcome(0)
		out.DoneItems = []json.RawMessage{base[0], json.RawMessage(`{"type":"message","id":"msg_0a","role":"assistant","status":"completed","content":[{"type":"output_text","text":"hi","annotations":[],"logprobs":[]}]}`)}
		s := e.prepare(c)
		must(t, s.Complete(context.Background(), out))
		s.Delivered(context.Background())
		c.assistant(0, turn{text: "hi"})
		c.user("q2")
		if s := e.prepare(c); s.Replayed() != 0 {
			t.Fatalf("replayed although the done message lost its phase")
		}
	})
}

func TestProjectionMismatchPoisons(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	out := turn{text: "hello"}.outcome(0)
	out.Sent.Content = "hell" // the client received less than the output says
	s := e.prepare(c)
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	ms, err := e.store.MarkersAt(context.Background(), s.scope.ID, []string{s.start})
	must(t, err)
	if len(ms) != 1 || ms[0].Reason != "projection_mismatch" {
		t.Fatalf("markers %+v", ms)
	}
}

// TestIncompletePoisonsItsPosition: an incomplete answer (cut off by
// max_output_tokens or a content filter) poisons its position, as the
// design says, and costs only that turn: the retry at the same position
// still replays the earlier block.
func TestIncompletePoisonsItsPosition(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	out := turn{text: "partial"}.outcome(1)
	out.Status = "incomplete"
	s := e.prepare(c)
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
	must(t, err)
	if len(ms) != 1 || ms[0].Kind != ledger.MarkerStartPoison || ms[0].Reason != "incomplete" {
		t.Fatalf("markers %+v, want the incomplete start-poison", ms)
	}
	// The client keeps the partial answer and goes on.
	c.assistant(1, turn{text: "partial"})
	c.user("q3")
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 0 {
		t.Fatalf("replayed %d beneath an incomplete answer with no record", s.Replayed())
	}
}

// TestInterruptedPoisonsTheStart: a stopped answer poisons its position,
// and that costs one turn: the retry replays the earlier block and is
// observed, its own output stays unreplayable at the poisoned position,
// and later turns replay every other block around it.
func TestInterruptedPoisonsTheStart(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d, want 1", s.Replayed())
	}
	s.Abandon(context.Background(), "client_gone")
	s.Abandon(context.Background(), "client_gone") // no-op
	s.Delivered(context.Background())              // no-op
	// The retry from the same position replays the earlier block and is
	// observed.
	s = e.prepare(c)
	if s.Replayed() != 1 || s.Skip() != "" || !s.Dispatched() {
		t.Fatalf("retry: replayed %d, skip %q, dispatched %v", s.Replayed(), s.Skip(), s.Dispatched())
	}
	sameInput(t, s.Input(), c.want(0))
	retry := turn{text: "Retried answer."}
	must(t, s.Complete(context.Background(), retry.outcome(1)))
	s.Delivered(context.Background())
	c.assistant(1, retry)
	// The next turn replays block 0 but not the retry (its position is
	// poisoned); the turn after replays 0 and 2 around it.
	c.user("q3")
	s = e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("turn 3: replayed %d, want 1", s.Replayed())
	}
	sameInput(t, s.Input(), c.want(0))
	must(t, s.Complete(context.Background(), mixedTurns[4].outcome(2)))
	s.Delivered(context.Background())
	c.assistant(2, mixedTurns[4])
	c.user("q4")
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 2 {
		t.Fatalf("turn 4: replayed %d, want 2", s.Replayed())
	}
	sameInput(t, s.Input(), c.want(0, 2))
}

func TestScopesNeverShare(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	for name, mutate := range map[string]func(*canonical.Scope){
		"relay token":  func(s *canonical.Scope) { s.RelayToken = "relay-token-2" },
		"upstream key": func(s *canonical.Scope) { s.Credential = "sk-test-2" },
		"caller":       func(s *canonical.Scope) { s.Caller = "bob" },
		"model":        func(s *canonical.Scope) { s.Model = "gpt-5.2-codex" },
		"reasoning":    func(s *canonical.Scope) { s.Reasoning = json.RawMessage(`{"effort":"high","summary":"auto"}`) },
	} {
		other := *c
		mutate(&other.scope)
		s := e.prepare(&other)
		if s.Replayed() != 0 {
			t.Errorf("%s: replayed across scopes", name)
		}
		s.Release(context.Background())
	}
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("own scope replayed %d, want 1", s.Replayed())
	}
	s.Release(context.Background())
}

func TestStaleGeneration(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	if _, err := e.store.AdvanceGenerations(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := e.prepare(c)
	if s.Replayed() != 0 || !s.Dispatched() {
		t.Fatalf("replayed %d dispatched %v after a generation advance", s.Replayed(), s.Dispatched())
	}
	s.Release(context.Background())
}

func TestCompetingIntent(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	first := e.prepare(c)
	if first.Replayed() != 1 {
		t.Fatalf("first replayed %d", first.Replayed())
	}
	// The same request while the first is in flight: its output could
	// differ from the first's, so the second goes without replay.
	second := e.prepare(c)
	if second.Replayed() != 0 || !second.Dispatched() {
		t.Fatalf("second: replayed %d, dispatched %v", second.Replayed(), second.Dispatched())
	}
	second.Release(context.Background())
	first.Release(context.Background())

	// An unresolved generation at an earlier block's start blocks that
	// block (but not a block it does not start).
	c2 := newConv(t, canonical.ShapeChat)
	c2.user("q1")
	pending := e.prepare(c2) // a regeneration of turn 0, still running
	s := e.prepare(c)
	if s.Replayed() != 0 {
		t.Fatalf("replayed %d with a competing generation at the block's start", s.Replayed())
	}
	s.Release(context.Background())
	pending.Release(context.Background())
	s = e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d once the competitor resolved", s.Replayed())
	}
	s.Release(context.Background())
}

func TestSnapshotAcceptance(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0]) // snapshot gpt-5.2-2025-12-11
	c.assistant(0, mixedTurns[0])
	c.user("q2")

	// Another conversation in the same scope observes a newer snapshot.
	other := newConv(t, canonical.ShapeChat)
	other.user("unrelated")
	s := e.prepare(other)
	out := turn{text: "x"}.outcome(0)
	out.Model = "gpt-5.2-2026-01-15"
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())

	e.clk.Add(23 * 60 * 60 * 1e9)
	s = e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("within 24h: replayed %d, want 1", s.Replayed())
	}
	s.Release(context.Background())
	e.clk.Add(2 * 60 * 60 * 1e9)
	s = e.prepare(c)
	if s.Replayed() != 0 {
		t.Fatalf("older snapshot after 25h: replayed %d, want 0", s.Replayed())
	}
	s.Release(context.Background())
}

func TestReasoningWithoutCiphertextIsNotAdmitted(t *testing.T) {
	for name, extra := range map[string]string{
		"null ciphertext":  `{"type":"reasoning","id":"rs_x","summary":[],"encrypted_content":null}`,
		"empty ciphertext": `{"type":"reasoning","id":"rs_x","summary":[],"encrypted_content":""}`,
		"no id":            `{"type":"reasoning","summary":[],"encrypted_content":"gAAAA-x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, Config{})
			c := newConv(t, canonical.ShapeChat)
			c.user("q1")
			out := turn{text: "hi"}.outcome(0)
			out.Output = append([]json.RawMessage{json.RawMessage(extra)}, out.Output...)
			e.prepareComplete(c, out)
			c.assistant(0, turn{text: "hi"})
			c.user("q2")
			s := e.prepare(c)
			defer s.Release(context.Background())
			if s.Replayed() != 0 {
				t.Fatal("replayed an output with a reasoning item that has no ciphertext")
			}
		})
	}
	// Control: the same output without the extra item is replayed.
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.prepareComplete(c, turn{text: "hi"}.outcome(0))
	c.assistant(0, turn{text: "hi"})
	c.user("q2")
	if s := e.prepare(c); s.Replayed() != 1 {
		t.Fatalf("control replayed %d", s.Replayed())
	}
}

// TestSnapshotIsInheritedFromTheDeterminingRecord: the design checks the
// snapshot of the record that determines the plan; earlier blocks inherit
// its acceptance. A block produced by an older snapshot stays replayable
// beneath a newer record that was generated with it.
func TestSnapshotIsInheritedFromTheDeterminingRecord(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0]) // snapshot gpt-5.2-2025-12-11
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("turn 1: replayed %d, want 1", s.Replayed())
	}
	out := mixedTurns[4].outcome(1)
	out.Model = "gpt-5.2-2026-01-15" // the scope moved to a new snapshot
	must(t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	c.assistant(1, mixedTurns[4])
	c.user("q3")
	e.clk.Add(25 * time.Hour) // the old snapshot alone would be refused now
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 2 {
		t.Fatalf("replayed %d, want 2 (block 0 inherits the acceptance of block 1's record)", s.Replayed())
	}
	sameInput(t, s.Input(), c.want(0, 1))
}
