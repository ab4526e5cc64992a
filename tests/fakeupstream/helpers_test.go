package fakeupstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const testKey = "sk-test-key-0123456789"

// newTest starts a fake behind httptest.Server.
func newTest(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if opts.APIKey == "" {
		opts.APIKey = testKey
	}
	if opts.Secret == nil {
		opts.Secret = []byte("test-secret")
	}
	s := New(opts)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

// post sends body to {ts}/v1/responses with the test key.
func post(t *testing.T, ts *httptest.Server, body string) (int, []byte) {
	t.Helper()
	return postKey(t, ts, testKey, body)
}

// postKey sends body with the given bearer key.
func postKey(t *testing.T, ts *httptest.Server, key, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// apiErr decodes an OpenAI error body, failing the test on another shape.
func apiErr(t *testing.T, body []byte) (message, typ string, param, code any) {
	t.Helper()
	var doc struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal(body, &doc); err != nil || doc.Error == nil {
		t.Fatalf("not an error body: %s", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := doc.Error[k]; !ok {
			t.Fatalf("error body lacks %q: %s", k, body)
		}
	}
	m, _ := doc.Error["message"].(string)
	ty, _ := doc.Error["type"].(string)
	return m, ty, doc.Error["param"], doc.Error["code"]
}

// sseEvent is one parsed SSE record.
type sseEvent struct {
	Event string
	Data  []byte
	Obj   map[string]any // nil when Data is not a JSON object
}

// parseSSE splits a body framed exactly as "event: X\ndata: Y\n\n".
func parseSSE(t *testing.T, body []byte) []sseEvent {
	t.Helper()
	if len(body) == 0 {
		return nil
	}
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("stream does not end with a blank line: %q", body[max(0, len(body)-40):])
	}
	var out []sseEvent
	for i, rec := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		lines := strings.Split(rec, "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "event: ") || !strings.HasPrefix(lines[1], "data: ") {
			t.Fatalf("record %d is not framed as event/data: %q", i, rec)
		}
		e := sseEvent{Event: strings.TrimPrefix(lines[0], "event: "), Data: []byte(strings.TrimPrefix(lines[1], "data: "))}
		var obj map[string]any
		if json.Unmarshal(e.Data, &obj) == nil {
			e.Obj = obj
		}
		out = append(out, e)
	}
	return out
}

// str reads a string member of a decoded object.
func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// num reads a numeric member of a decoded object.
func num(m map[string]any, k string) int {
	f, _ := m[k].(float64)
	return int(f)
}

// streamCheck verifies the invariants every stream must hold and returns
// the items of output_item.done events and the terminal event (nil if none).
// It checks: framing, event line equals data type, sequence numbers 0..n-1,
// created then in_progress first, properly nested item and part events,
// deltas concatenating to their done values, at most one terminal event and
// nothing after it.
func streamCheck(t *testing.T, evs []sseEvent) (done []map[string]any, terminal map[string]any) {
	t.Helper()
	if len(evs) < 2 || evs[0].Event != "response.created" || evs[1].Event != "response.in_progress" {
		t.Fatalf("stream must start with created, in_progress; got %v", types(evs))
	}
	var (
		openItem  map[string]any
		openIndex = -1
		nextIndex = 0
		partOpen  bool
		acc       = map[string]string{}
	)
	for i, e := range evs {
		if e.Obj == nil {
			t.Fatalf("event %d data is not a JSON object: %s", i, e.Data)
		}
		if terminal != nil {
			t.Fatalf("event %d (%s) after terminal event", i, e.Event)
		}
		if str(e.Obj, "type") != e.Event {
			t.Fatalf("event %d: event line %q, data type %q", i, e.Event, str(e.Obj, "type"))
		}
		if seq, ok := e.Obj["sequence_number"].(float64); !ok || int(seq) != i {
			t.Fatalf("event %d: sequence_number %v", i, e.Obj["sequence_number"])
		}
		typ := e.Event
		if strings.HasPrefix(typ, "response.") && typ != "response.created" && typ != "response.in_progress" &&
			typ != "response.completed" && typ != "response.incomplete" && typ != "response.failed" &&
			typ != "response.output_item.added" {
			if openItem == nil {
				t.Fatalf("event %d (%s) outside an item", i, typ)
			}
			if num(e.Obj, "output_index") != openIndex {
				t.Fatalf("event %d (%s): output_index %d, open %d", i, typ, num(e.Obj, "output_index"), openIndex)
			}
			if typ != "response.output_item.done" && str(e.Obj, "item_id") != str(openItem, "id") {
				t.Fatalf("event %d (%s): item_id %q, open %q", i, typ, str(e.Obj, "item_id"), str(openItem, "id"))
			}
		}
		switch typ {
		case "response.created", "response.in_progress":
			r, _ := e.Obj["response"].(map[string]any)
			if str(r, "status") != "in_progress" || str(r, "object") != "response" {
				t.Fatalf("event %d: lifecycle response %v", i, r)
			}
		case "response.output_item.added":
			if openItem != nil {
				t.Fatalf("event %d: item added while item %d open", i, openIndex)
			}
			openItem, _ = e.Obj["item"].(map[string]any)
			openIndex = num(e.Obj, "output_index")
			if openIndex != nextIndex {
				t.Fatalf("event %d: output_index %d, want %d", i, openIndex, nextIndex)
			}
			clear(acc)
		case "response.content_part.added":
			if partOpen {
				t.Fatalf("event %d: part added twice", i)
			}
			partOpen = true
		case "response.content_part.done":
			if !partOpen {
				t.Fatalf("event %d: part done without added", i)
			}
			partOpen = false
		case "response.output_text.delta", "response.refusal.delta":
			if !partOpen {
				t.Fatalf("event %d: %s outside a content part", i, typ)
			}
			acc[typ] += str(e.Obj, "delta")
		case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta",
			"response.reasoning_summary_text.delta":
			acc[typ] += str(e.Obj, "delta")
		case "response.output_text.done":
			expectAcc(t, i, acc["response.output_text.delta"], str(e.Obj, "text"))
		case "response.refusal.done":
			expectAcc(t, i, acc["response.refusal.delta"], str(e.Obj, "refusal"))
		case "response.function_call_arguments.done":
			expectAcc(t, i, acc["response.function_call_arguments.delta"], str(e.Obj, "arguments"))
		case "response.custom_tool_call_input.done":
			expectAcc(t, i, acc["response.custom_tool_call_input.delta"], str(e.Obj, "input"))
		case "response.reasoning_summary_text.done":
			expectAcc(t, i, acc["response.reasoning_summary_text.delta"], str(e.Obj, "text"))
		case "response.output_item.done":
			if partOpen {
				t.Fatalf("event %d: item done with a part open", i)
			}
			item, _ := e.Obj["item"].(map[string]any)
			if str(item, "id") != str(openItem, "id") || str(item, "type") != str(openItem, "type") {
				t.Fatalf("event %d: done item %v does not match added %v", i, item, openItem)
			}
			done = append(done, item)
			openItem, nextIndex = nil, nextIndex+1
		case "response.completed", "response.incomplete", "response.failed", "error":
			if openItem != nil && typ != "response.failed" && typ != "error" {
				t.Fatalf("event %d: %s with item %d open", i, typ, openIndex)
			}
			terminal = e.Obj
		}
	}
	return done, terminal
}

// expectAcc compares accumulated deltas with a done value.
func expectAcc(t *testing.T, i int, got, want string) {
	t.Helper()
	if got != want {
		t.Fatalf("event %d: deltas %q != done %q", i, got, want)
	}
}

// types lists the event types of a stream.
func types(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.Event
	}
	return out
}
