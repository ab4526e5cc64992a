package reasoningcache

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// clock is a settable test clock.
type clock struct{ ns atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ns.Store(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time      { return time.Unix(0, c.ns.Load()) }
func (c *clock) Add(d time.Duration) { c.ns.Add(int64(d)) }
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// env is one test engine over a real ledger in a temporary directory.
type env struct {
	t     testing.TB
	store *ledger.Store
	eng   *Engine
	clk   *clock
}

func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	clk := newClock()
	st, err := ledger.Open(filepath.Join(t.TempDir(), "cache.sqlite"), ledger.Options{Now: clk.Now, HotCacheBytes: HotCacheBytes(cfg.MemoryBudget)})
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	if cfg.Now == nil {
		cfg.Now = clk.Now
	}
	eng, err := New(st, cfg)
	must(t, err)
	return &env{t: t, store: st, eng: eng, clk: clk}
}

func testScope(shape canonical.Shape) canonical.Scope {
	return canonical.Scope{
		Shape: shape, Origin: "https://upstream.test", Endpoint: "/v1/responses",
		Credential: "sk-test-1", RelayToken: "relay-token-1", Caller: "alice", Model: "gpt-5.2",
		Reasoning: json.RawMessage(`{"effort":"medium","summary":"auto"}`), Store: false,
		Include: []string{"reasoning.encrypted_content"},
	}
}

// call is one tool call of a test turn.
type call struct {
	name, args string
	custom     bool
}

// turn is one assistant output of a test conversation.
type turn struct {
	text  string
	calls []call
	seed  string // distinguishes ids and ciphertext between outputs
}

// output builds the upstream output items of a turn: reasoning, a message
// with phase when there is text, then the calls.
func (tu turn) output(k int) []json.RawMessage {
	seed := tu.seed
	if seed == "" {
		seed = "a"
	}
	items := []json.RawMessage{json.RawMessage(fmt.Sprintf(
		`{"type":"reasoning","id":"rs_%d%s","summary":[{"type":"summary_text","text":"thinking %d"}],"encrypted_content":"gAAAA-%d-%s-cipher","status":"completed"}`,
		k, seed, k, k, seed))}
	if tu.text != "" {
		txt, _ := json.Marshal(tu.text)
		items = append(items, json.RawMessage(fmt.Sprintf(
			`{"type":"message","id":"msg_%d%s","role":"assistant","status":"completed","phase":"final_answer","content":[{"type":"output_text","text":%s,"annotations":[],"logprobs":[]}]}`,
			k, seed, txt)))
	}
	for i, c := range tu.calls {
		name, _ := json.Marshal(c.name)
		args, _ := json.Marshal(c.args)
		if c.custom {
			items = append(items, json.RawMessage(fmt.Sprintf(
				`{"type":"custom_tool_call","id":"ctc_%d_%d%s","call_id":"call_%d_%d","name":%s,"input":%s}`, k, i, seed, k, i, name, args)))
			continue
		}
		items = append(items, json.RawMessage(fmt.Sprintf(
			`{"type":"function_call","id":"fc_%d_%d%s","call_id":"call_%d_%d","name":%s,"arguments":%s,"status":"completed"}`, k, i, seed, k, i, name, args)))
	}
	return items
}

func (tu turn) sent(k int) Sent {
	s := Sent{Content: tu.text}
	for i, c := range tu.calls {
		s.ToolCalls = append(s.ToolCalls, ToolCall{ID: fmt.Sprintf("call_%d_%d", k, i), Name: c.name, Arguments: c.args, Custom: c.custom})
	}
	return s
}

func (tu turn) outcome(k int) Outcome {
	return Outcome{Status: "completed", Model: "gpt-5.2-2025-12-11", Output: tu.output(k), Sent: tu.sent(k)}
}

// conv is a client conversation: its visible history and the translated
// input, with the item range of every assistant block.
type conv struct {
	t       testing.TB
	shape   canonical.Shape
	scope   canonical.Scope
	history []json.RawMessage
	spans   [][2]int
	input   []json.RawMessage
	blocks  [][2]int // input ranges of assistant envelopes, in order
	outputs [][]json.RawMessage
}

func newConv(t testing.TB, shape canonical.Shape) *conv {
	c := &conv{t: t, shape: shape, scope: testScope(shape)}
	if shape == canonical.ShapeChat {
		c.add(json.RawMessage(`{"role":"system","content":"You are a coding assistant."}`),
			json.RawMessage(`{"role":"system","content":"You are a coding assistant."}`))
	} else {
		c.add(json.RawMessage(`{"type":"message","role":"developer","content":"You are a coding assistant."}`),
			json.RawMessage(`{"type":"message","role":"developer","content":"You are a coding assistant."}`))
	}
	return c
}

// add appends one envelope and what it translates to.
func (c *conv) add(envelope json.RawMessage, items ...json.RawMessage) {
	c.history = append(c.history, envelope)
	c.spans = append(c.spans, [2]int{len(c.input), len(c.input) + len(items)})
	c.input = append(c.input, items...)
}

func (c *conv) user(text string) {
	b := mustJSON(c.t, text)
	if c.shape == canonical.ShapeChat {
		m := json.RawMessage(fmt.Sprintf(`{"role":"user","content":%s}`, b))
		c.add(m, m)
		return
	}
	m := json.RawMessage(fmt.Sprintf(`{"type":"message","role":"user","content":%s}`, b))
	c.add(m, m)
}

// assistant appends the envelope(s) a client sends back for turn k and
// their translation (without ids, as a stateless client would).
func (c *conv) assistant(k int, tu turn) {
	s := tu.sent(k)
	start := len(c.input)
	if c.shape == canonical.ShapeChat {
		var content any
		if s.Content != "" {
			content = s.Content
		}
		type fn struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		}
		type tc struct {
			ID       string `json:"id"`
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		msg := map[string]any{"role": "assistant", "content": content}
		var calls []tc
		var items []json.RawMessage
		if s.Content != "" {
			items = append(items, mustJSON(c.t, map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": s.Content}}}))
		}
		for _, x := range s.ToolCalls {
			calls = append(calls, tc{ID: x.ID, Type: "function", Function: fn{x.Name, x.Arguments}})
			typ, field := "function_call", "arguments"
			if x.Custom {
				typ, field = "custom_tool_call", "input"
			}
			items = append(items, mustJSON(c.t, map[string]any{"type": typ, "call_id": x.ID, "name": x.Name, field: x.Arguments}))
		}
		if len(calls) > 0 {
			msg["tool_calls"] = calls
		}
		c.add(mustJSON(c.t, msg), items...)
	} else {
		if s.Content != "" {
			m := mustJSON(c.t, map[string]any{"type": "message", "role": "assistant",
				"content": []any{map[string]any{"type": "output_text", "text": s.Content}}})
			c.add(m, m)
		}
		for _, x := range s.ToolCalls {
			var m json.RawMessage
			if x.Custom {
				m = mustJSON(c.t, map[string]any{"type": "custom_tool_call", "call_id": x.ID, "name": x.Name, "input": x.Arguments})
			} else {
				m = mustJSON(c.t, map[string]any{"type": "function_call", "call_id": x.ID, "name": x.Name, "arguments": x.Arguments})
			}
			c.add(m, m)
		}
	}
	c.blocks = append(c.blocks, [2]int{start, len(c.input)})
	c.outputs = append(c.outputs, tu.output(k))
}

// results appends a tool result for every call of turn k.
func (c *conv) results(k int, tu turn) {
	for i := range tu.calls {
		id := fmt.Sprintf("call_%d_%d", k, i)
		if c.shape == canonical.ShapeChat {
			m := json.RawMessage(fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":"ok %d"}`, id, i))
			c.add(m, json.RawMessage(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"ok %d"}`, id, i)))
			continue
		}
		m := json.RawMessage(fmt.Sprintf(`{"type":"function_call_output","call_id":%q,"output":"ok %d"}`, id, i))
		c.add(m, m)
	}
}

func (c *conv) request() Request {
	return Request{Scope: c.scope, History: clone(c.history), Spans: clone(c.spans), Input: clone(c.input)}
}

func clone[T any](s []T) []T { return append([]T(nil), s...) }

// want returns the input with the given assistant blocks replaced by their
// original outputs.
func (c *conv) want(blocks ...int) []json.RawMessage {
	var ranges [][2]int
	var items [][]json.RawMessage
	for _, b := range blocks {
		ranges = append(ranges, c.blocks[b])
		items = append(items, c.outputs[b])
	}
	return replaceRanges(c.input, ranges, items)
}

func sameInput(t testing.TB, got, want []json.RawMessage) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("input has %d items, want %d:\n%s\nwant:\n%s", len(got), len(want), join(got), join(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("input item %d:\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}

func join(items []json.RawMessage) string {
	var b bytes.Buffer
	for _, it := range items {
		b.Write(it)
		b.WriteByte('\n')
	}
	return b.String()
}

// runTurn prepares the conversation's current request, completes it with
// tu as turn k and delivers it. It returns the session.
func (e *env) runTurn(c *conv, k int, tu turn) *Session {
	e.t.Helper()
	ctx := context.Background()
	s, err := e.eng.Prepare(ctx, c.request())
	must(e.t, err)
	must(e.t, s.Complete(ctx, tu.outcome(k)))
	s.Delivered(ctx)
	return s
}

// prepare prepares the conversation's current request.
func (e *env) prepare(c *conv) *Session {
	e.t.Helper()
	s, err := e.eng.Prepare(context.Background(), c.request())
	must(e.t, err)
	return s
}

// prepareComplete runs one request with the given outcome and delivers it.
func (e *env) prepareComplete(c *conv, out Outcome) *Session {
	e.t.Helper()
	s := e.prepare(c)
	must(e.t, s.Complete(context.Background(), out))
	s.Delivered(context.Background())
	return s
}
