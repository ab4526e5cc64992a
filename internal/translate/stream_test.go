package translate

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// ev builds an event whose name is taken from the JSON "type".
func ev(data string) sseEvent {
	var head struct{ Type string }
	_ = json.Unmarshal([]byte(data), &head)
	return sseEvent{name: head.Type, data: []byte(data)}
}

const (
	evCreated   = `{"type":"response.created","response":{"id":"resp_T","created_at":1700000000,"model":"gpt-t","status":"in_progress","output":[]}}`
	evMsgAdded  = `{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","role":"assistant","content":[]}}`
	evCompleted = `{"type":"response.completed","response":{"id":"resp_T","status":"completed","usage":{"input_tokens":5,"input_tokens_details":{"cached_tokens":1,"cache_write_tokens":2},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},"total_tokens":8}}}`
)

// chunk is a decoded client frame.
type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role      *string `json:"role"`
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				Index    int     `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
	Error *struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// decodeFrames returns the decoded chunks and whether [DONE] ended the output.
func decodeFrames(t *testing.T, out []byte) ([]chunk, bool) {
	t.Helper()
	var chunks []chunk
	done := false
	for _, f := range checkFrames(t, out) {
		if string(f) == "[DONE]" {
			done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal(f, &c); err != nil {
			t.Fatal(err)
		}
		chunks = append(chunks, c)
	}
	return chunks, done
}

// collect summarizes chunks the way a Chat client accumulates them.
type collected struct {
	content, refusal string
	names, args      map[int]string
	ids              map[int]string
	finish           string
	nameCount        map[int]int
}

func collect(t *testing.T, chunks []chunk) collected {
	c := collected{names: map[int]string{}, args: map[int]string{}, ids: map[int]string{}, nameCount: map[int]int{}}
	for i, ch := range chunks {
		if ch.Error != nil {
			continue
		}
		if i == 0 && (len(ch.Choices) != 1 || ch.Choices[0].Delta.Role == nil || *ch.Choices[0].Delta.Role != "assistant") {
			t.Errorf("first chunk has no assistant role")
		}
		if ch.ID != chunks[0].ID || ch.Created != chunks[0].Created || ch.Model != chunks[0].Model || ch.Object != "chat.completion.chunk" {
			t.Errorf("chunk %d header differs", i)
		}
		for _, choice := range ch.Choices {
			d := choice.Delta
			if d.Content != nil {
				c.content += *d.Content
			}
			if d.Refusal != nil {
				c.refusal += *d.Refusal
			}
			for _, tc := range d.ToolCalls {
				if tc.ID != nil {
					c.ids[tc.Index] = *tc.ID
				}
				if tc.Function.Name != nil {
					c.names[tc.Index] += *tc.Function.Name
					c.nameCount[tc.Index]++
				}
				if tc.Function.Arguments != nil {
					c.args[tc.Index] += *tc.Function.Arguments
				}
			}
			if choice.FinishReason != nil {
				c.finish = *choice.FinishReason
			}
		}
	}
	return c
}

func TestStreamCases(t *testing.T) {
	cases := []struct {
		name    string
		events  []string
		content string
		refusal string
		calls   []ToolCall
		finish  string
		errCode string // error frame expected
		errType string
		status  int
	}{
		{name: "text deltas", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"Hel"}`,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"lo \"q\"\n<b>"}`,
			evCompleted}, content: "Hello \"q\"\n<b>", finish: "stop"},
		{name: "text only in done events", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"whole"}`,
			`{"type":"response.content_part.done","output_index":0,"content_index":0,"part":{"type":"output_text","text":"whole"}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"whole"}]}}`,
			evCompleted}, content: "whole", finish: "stop"},
		{name: "missing tail", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"par"}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","content":[{"type":"output_text","text":"partial"}]}}`,
			evCompleted}, content: "partial", finish: "stop"},
		{name: "text only in completed output", events: []string{evCreated,
			`{"type":"response.completed","response":{"status":"completed","output":[{"id":"m","type":"message","content":[{"type":"output_text","text":"late"},{"type":"refusal","refusal":"nope"}]}]}}`},
			content: "late", refusal: "nope", finish: "stop"},
		{name: "not a prefix", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"abc"}`,
			`{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"xyz"}`},
			content: "abc", errType: "upstream_error", status: 502},
		{name: "refusal", events: []string{evCreated, evMsgAdded,
			`{"type":"response.refusal.delta","output_index":0,"content_index":0,"delta":"I can't"}`,
			`{"type":"response.refusal.done","output_index":0,"content_index":0,"refusal":"I can't."}`,
			evCompleted}, refusal: "I can't.", finish: "stop"},
		{name: "function call args only in done", events: []string{evCreated,
			`{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":""}}`,
			`{"type":"response.function_call_arguments.done","output_index":0,"item_id":"fc_1","arguments":"{\"a\":1}"}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{\"a\":1}"}}`,
			evCompleted}, calls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{"a":1}`}}, finish: "tool_calls"},
		{name: "function call only in item done", events: []string{evCreated,
			`{"type":"response.output_item.done","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"f","arguments":"{}"}}`,
			evCompleted}, calls: []ToolCall{{ID: "call_1", Name: "f", Arguments: `{}`}}, finish: "tool_calls"},
		{name: "custom tool call as function", events: []string{evCreated,
			`{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
			`{"type":"response.reasoning_summary_text.delta","output_index":0,"item_id":"rs_1","summary_index":0,"delta":"thinking"}`,
			`{"type":"response.output_item.added","output_index":1,"item":{"id":"ctc_1","type":"custom_tool_call","call_id":"call_P","name":"ApplyPatch","input":""}}`,
			`{"type":"response.custom_tool_call_input.delta","output_index":1,"item_id":"ctc_1","delta":"*** Begin"}`,
			`{"type":"response.custom_tool_call_input.done","output_index":1,"item_id":"ctc_1","input":"*** Begin Patch"}`,
			`{"type":"response.output_item.added","output_index":2,"item":{"id":"fc_2","type":"function_call","call_id":"call_F","name":"g","arguments":""}}`,
			`{"type":"response.function_call_arguments.delta","output_index":2,"item_id":"fc_2","delta":"{}"}`,
			evCompleted}, calls: []ToolCall{{ID: "call_P", Name: "ApplyPatch", Arguments: "*** Begin Patch", Custom: true}, {ID: "call_F", Name: "g", Arguments: "{}"}}, finish: "tool_calls"},
		{name: "incomplete length", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"cut"}`,
			`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`},
			content: "cut", finish: "length"},
		{name: "incomplete content filter", events: []string{evCreated,
			`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}}`},
			finish: "content_filter"},
		{name: "response failed", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`,
			`{"type":"response.failed","response":{"id":"resp_T","status":"failed","error":{"code":"server_error","message":"The server had an error."}}}`},
			content: "x", errCode: "server_error", errType: "upstream_error", status: 502},
		{name: "error event flat", events: []string{evCreated,
			`{"type":"error","code":"rate_limit_exceeded","message":"Slow down","param":null,"sequence_number":3}`},
			errCode: "rate_limit_exceeded", errType: "rate_limit_exceeded", status: 429},
		{name: "error event nested", events: []string{
			`{"type":"error","sequence_number":2,"error":{"type":"too_many_requests","code":"too_many_requests","message":"Too Many Requests","param":null}}`},
			errCode: "too_many_requests", errType: "too_many_requests", status: 502},
		{name: "malformed json", events: []string{evCreated, `{"type":"response.output_text.delta",`},
			errType: "upstream_error", status: 502},
		{name: "unknown and reasoning events ignored", events: []string{evCreated,
			`{"type":"response.brand_new_event","whatever":[1,2,3]}`,
			`{"type":"response.reasoning_text.delta","output_index":0,"content_index":0,"delta":"hidden"}`,
			`{"type":"response.output_text.annotation.added","output_index":0,"annotation":{}}`,
			evCompleted}, finish: "stop"},
		{name: "args delta for unknown call", events: []string{evCreated,
			`{"type":"response.function_call_arguments.delta","output_index":4,"item_id":"fc_x","delta":"{}"}`},
			errType: "upstream_error", status: 502},
		{name: "no terminal event", events: []string{evCreated, evMsgAdded,
			`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`},
			content: "x", errType: "upstream_error", status: 502},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			events := make([]sseEvent, len(tc.events))
			for i, e := range tc.events {
				events[i] = ev(e)
			}
			out, s := runStream(t, streamOpts, events)
			chunks, done := decodeFrames(t, out)
			got := collect(t, chunks)
			if got.content != tc.content || got.refusal != tc.refusal {
				t.Errorf("content %q refusal %q", got.content, got.refusal)
			}
			sent := s.Sent()
			if sent.Content != tc.content || sent.Refusal != tc.refusal {
				t.Errorf("Sent %+v", sent)
			}
			if len(sent.ToolCalls) != len(tc.calls) {
				t.Fatalf("Sent.ToolCalls = %+v", sent.ToolCalls)
			}
			for i, want := range tc.calls {
				if sent.ToolCalls[i] != want {
					t.Errorf("Sent.ToolCalls[%d] = %+v", i, sent.ToolCalls[i])
				}
				if got.ids[i] != want.ID || got.names[i] != want.Name || got.args[i] != want.Arguments || got.nameCount[i] != 1 {
					t.Errorf("client call %d: id %q name %q (x%d) args %q", i, got.ids[i], got.names[i], got.nameCount[i], got.args[i])
				}
			}
			last := chunks[len(chunks)-1]
			if tc.status != 0 {
				if done || last.Error == nil {
					t.Fatalf("want a final error frame without [DONE]: %s", out)
				}
				if last.Error.Type != tc.errType || (tc.errCode != "" && (last.Error.Code == nil || *last.Error.Code != tc.errCode)) {
					t.Errorf("error frame %+v", last.Error)
				}
				if e := s.Err(); e != nil && e.HTTPStatus() != tc.status {
					t.Errorf("status %d, want %d", e.HTTPStatus(), tc.status)
				}
				return
			}
			if !done || got.finish != tc.finish || s.FinishReason() != tc.finish {
				t.Errorf("done %v finish %q/%q, want %q", done, got.finish, s.FinishReason(), tc.finish)
			}
			if len(last.Choices) != 0 || string(last.Usage) == "null" {
				t.Errorf("last chunk is not the usage chunk: %+v", last)
			}
		})
	}
}

func TestStreamUsageChunk(t *testing.T) {
	out, s := runStream(t, streamOpts, []sseEvent{ev(evCreated), ev(evCompleted)})
	want := `"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,"prompt_tokens_details":{"cached_tokens":1,"cache_write_tokens":2},"completion_tokens_details":{"reasoning_tokens":1}}}`
	if !strings.Contains(string(out), want) {
		t.Errorf("usage chunk missing in %s", out)
	}
	if u := s.Usage(); u == nil || u.TotalTokens != 8 || *u.InputTokensDetails.CacheWriteTokens != 2 {
		t.Errorf("Usage() = %+v", u)
	}
	if s.ResponseID() != "resp_T" {
		t.Errorf("ResponseID %q", s.ResponseID())
	}
	opts := streamOpts
	opts.IncludeUsage = false
	out, _ = runStream(t, opts, []sseEvent{ev(evCreated), ev(evMsgAdded),
		ev(`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`), ev(evCompleted)})
	if strings.Contains(string(out), `"usage"`) || !strings.HasSuffix(string(out), "data: [DONE]\n\n") {
		t.Errorf("usage without include_usage: %s", out)
	}
}

func TestStreamFallbackHeader(t *testing.T) {
	out, _ := runStream(t, streamOpts, []sseEvent{ev(evMsgAdded),
		ev(`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"x"}`),
		ev(`{"type":"response.completed","response":{"id":"resp_LATE","created_at":5,"model":"late","status":"completed"}}`)})
	chunks, _ := decodeFrames(t, out)
	collect(t, chunks)
	if chunks[0].ID != "chatcmpl-fallback" || chunks[0].Created != 1 || chunks[0].Model != "fallback-model" {
		t.Errorf("header %+v", chunks[0])
	}
}

func TestStreamStartedAndEnded(t *testing.T) {
	s := NewStream(streamOpts)
	if s.Started() {
		t.Fatal("started before any event")
	}
	out, _, err := s.Event(nil, "response.in_progress", []byte(`{"type":"response.in_progress","response":{"id":"resp_Z"}}`))
	if err != nil || len(out) != 0 || s.Started() {
		t.Fatalf("in_progress produced %q %v", out, err)
	}
	out, _, _ = s.Event(out, "", []byte(evCreated))
	if !s.Started() || !strings.Contains(string(out), `"id":"chatcmpl-T"`) {
		t.Fatalf("created: %s", out)
	}
	out, res, err := s.Event(out, "response.completed", []byte(evCompleted))
	if err != nil || !res.Terminal {
		t.Fatal(res, err)
	}
	n := len(out)
	out, res, err = s.Event(out, "", []byte(`{"type":"response.output_text.delta","delta":"late"}`))
	if err != nil || res.Terminal || len(out) != n {
		t.Errorf("event after terminal produced output")
	}
	out = s.Finish(out)
	if again := s.Finish(out); len(again) != len(out) {
		t.Error("second Finish appended")
	}
	if again := s.Fail(out, nil); len(again) != len(out) {
		t.Error("Fail after Finish appended")
	}
	s = NewStream(streamOpts)
	out, _, err = s.Event(nil, "", []byte("[DONE]"))
	if err != nil || len(out) != 0 {
		t.Errorf("[DONE] data: %q %v", out, err)
	}
	out = s.Fail(out, apierr.New(http.StatusGatewayTimeout, apierr.TypeTimeout, "timeout", "no data"))
	if !s.Started() || !strings.HasPrefix(string(out), `data: {"error":`) {
		t.Errorf("Fail: %s", out)
	}
}

func TestStreamOutputItems(t *testing.T) {
	item0 := `{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gA0"}`
	item1 := `{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":"{}"}`
	base := []sseEvent{ev(evCreated),
		ev(`{"type":"response.output_item.done","output_index":1,"item":` + item1 + `}`),
		ev(`{"type":"response.output_item.done","output_index":0,"item":` + item0 + `}`)}
	// No output in the terminal event: done items by output_index.
	_, s := runStream(t, streamOpts, append(base, ev(`{"type":"response.completed","response":{"status":"completed"}}`)))
	out := s.Output()
	if len(out) != 2 || string(out[0]) != item0 || string(out[1]) != item1 {
		t.Errorf("fallback output %s", out)
	}
	// Terminal output wins, even when empty.
	_, s = runStream(t, streamOpts, append(base, ev(`{"type":"response.completed","response":{"status":"completed","output":[]}}`)))
	if out := s.Output(); out == nil || len(out) != 0 {
		t.Errorf("empty terminal output %s", out)
	}
	_, s = runStream(t, streamOpts, append(base, ev(`{"type":"response.completed","response":{"status":"completed","output":[`+item0+`,`+item1+`]}}`)))
	if out := s.Output(); len(out) != 2 || string(out[0]) != item0 {
		t.Errorf("terminal output %s", out)
	}
}

func TestStreamTerminalAccessors(t *testing.T) {
	s := NewStream(ChatOptions{ID: "chatcmpl-x", Model: "m"})
	events := []string{
		`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","created_at":1,"model":"gpt-5.2","status":"in_progress","output":[]}}`,
		`{"type":"response.output_item.done","sequence_number":1,"output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAAB-done"}}`,
		`{"type":"response.output_item.done","sequence_number":2,"output_index":999999999,"item":{"id":"rs_2","type":"reasoning","summary":[]}}`,
		`{"type":"response.completed","sequence_number":3,"response":{"id":"resp_1","model":"gpt-5.2-2025-12-11","status":"completed","output":[{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gAAAAB-final"}]}}`,
	}
	for _, ev := range events {
		if _, _, err := s.Event(nil, "", []byte(ev)); err != nil {
			t.Fatal(err)
		}
	}
	if s.Status() != "completed" || s.Snapshot() != "gpt-5.2-2025-12-11" {
		t.Fatalf("status %q snapshot %q", s.Status(), s.Snapshot())
	}
	done := s.DoneItems()
	if len(done) != 1 || !strings.Contains(string(done[0]), "gAAAAB-done") {
		t.Fatalf("done items %q", done)
	}
	if out := s.Output(); len(out) != 1 || !strings.Contains(string(out[0]), "gAAAAB-final") {
		t.Fatalf("output %q", out)
	}
}
