package fakeupstream

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testTools are a realistic Cursor tool set in Responses form.
const testTools = `[
 {"type":"function","name":"read_file","description":"Read a file","strict":false,
  "parameters":{"type":"object","properties":{"path":{"type":"string"},"limit":{"type":"integer"}},"required":["path","limit"]}},
 {"type":"function","name":"grep","strict":null,"parameters":{"type":"object","properties":{"pattern":{"type":["string","null"]}},"required":["pattern"]}},
 {"type":"custom","name":"ApplyPatch","description":"Apply a patch","format":{"type":"grammar","syntax":"lark","definition":"start: /.+/"}}]`

// body builds a request whose last user message is text.
func body(text string, stream bool, extra string) string {
	b, _ := json.Marshal(text)
	s := fmt.Sprintf(`{"model":"gpt-5.2","stream":%t,"store":false,"include":["reasoning.encrypted_content"],"input":[{"type":"message","role":"user","content":[{"type":"input_text","text":%s}]}]`, stream, b)
	if extra != "" {
		s += "," + extra
	}
	return s + "}"
}

// itemTypes lists the types of items.
func itemTypes(items []map[string]any) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = str(it, "type")
	}
	return out
}

// terminalOutput returns response.output of a terminal lifecycle event as items.
func terminalOutput(t *testing.T, terminal map[string]any) []map[string]any {
	t.Helper()
	r, _ := terminal["response"].(map[string]any)
	arr, ok := r["output"].([]any)
	if !ok {
		t.Fatalf("terminal response has no output array: %v", terminal)
	}
	out := make([]map[string]any, len(arr))
	for i, v := range arr {
		out[i], _ = v.(map[string]any)
	}
	return out
}

func TestScenarioStreams(t *testing.T) {
	_, ts := newTest(t, Options{})
	tools := `"tools":` + testTools
	cases := []struct {
		token    string
		extra    string
		items    []string
		terminal string // "" = none
		check    func(t *testing.T, evs []sseEvent, done []map[string]any, term map[string]any)
	}{
		{"", "", []string{"reasoning", "message"}, "response.completed", func(t *testing.T, evs []sseEvent, done []map[string]any, term map[string]any) {
			msg := done[1]
			if str(msg, "phase") != "final_answer" || msgText(msg) != "echo: hello" {
				t.Errorf("message = %v", msg)
			}
			if n := count(evs, "response.output_text.delta"); n < 3 {
				t.Errorf("%d text deltas, want several", n)
			}
			if count(evs, "response.reasoning_summary_text.delta") != 0 {
				t.Error("summary events without reasoning.summary")
			}
			if s, _ := done[0]["summary"].([]any); len(s) != 0 {
				t.Errorf("summary parts without reasoning.summary: %v", s)
			}
			r, _ := term["response"].(map[string]any)
			u, _ := r["usage"].(map[string]any)
			itd, _ := u["input_tokens_details"].(map[string]any)
			otd, _ := u["output_tokens_details"].(map[string]any)
			if num(itd, "cached_tokens") == 0 || num(otd, "reasoning_tokens") == 0 ||
				num(u, "total_tokens") != num(u, "input_tokens")+num(u, "output_tokens") {
				t.Errorf("usage = %v", u)
			}
		}},
		{"[[text]]", `"reasoning":{"effort":"low","summary":"auto"}`, []string{"reasoning", "message"}, "response.completed", func(t *testing.T, evs []sseEvent, done []map[string]any, _ map[string]any) {
			want := []string{"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
				"response.reasoning_summary_text.delta", "response.reasoning_summary_text.done", "response.reasoning_summary_part.done"}
			if got := types(evs)[3:8]; !reflect.DeepEqual(got, want) {
				t.Errorf("summary events = %v", got)
			}
			if s, _ := done[0]["summary"].([]any); len(s) != 1 {
				t.Errorf("summary = %v", done[0]["summary"])
			}
		}},
		{"[[tool]]", tools, []string{"reasoning", "function_call"}, "response.completed", func(t *testing.T, evs []sseEvent, done []map[string]any, _ map[string]any) {
			fc := done[1]
			if str(fc, "name") != "read_file" || str(fc, "arguments") != `{"path":"fake-path"}` ||
				!strings.HasPrefix(str(fc, "call_id"), "call_") || str(fc, "status") != "completed" {
				t.Errorf("function_call = %v", fc)
			}
			if n := count(evs, "response.function_call_arguments.delta"); n < 2 {
				t.Errorf("%d argument deltas, want 2+", n)
			}
		}},
		{"[[parallel_tools]]", tools, []string{"reasoning", "function_call", "function_call"}, "response.completed", func(t *testing.T, _ []sseEvent, done []map[string]any, _ map[string]any) {
			if str(done[1], "name") != "read_file" || str(done[2], "name") != "grep" ||
				str(done[2], "arguments") != `{"pattern":"fake-pattern"}` || str(done[1], "call_id") == str(done[2], "call_id") {
				t.Errorf("calls = %v / %v", done[1], done[2])
			}
		}},
		{"[[parallel_tools]]", `"tools":[{"type":"function","name":"only","parameters":null,"strict":null}]`, []string{"reasoning", "function_call", "function_call"}, "response.completed", func(t *testing.T, _ []sseEvent, done []map[string]any, _ map[string]any) {
			if str(done[1], "name") != "only" || str(done[2], "name") != "only" || str(done[1], "arguments") != "{}" {
				t.Errorf("calls = %v / %v", done[1], done[2])
			}
		}},
		{"[[custom_tool]]", tools, []string{"reasoning", "custom_tool_call"}, "response.completed", func(t *testing.T, evs []sseEvent, done []map[string]any, _ map[string]any) {
			if str(done[1], "name") != "ApplyPatch" || str(done[1], "input") != applyPatch {
				t.Errorf("custom call = %v", done[1])
			}
			if n := count(evs, "response.custom_tool_call_input.delta"); n < 2 {
				t.Errorf("%d input deltas", n)
			}
		}},
		{"[[refusal]]", "", []string{"reasoning", "message"}, "response.completed", func(t *testing.T, evs []sseEvent, done []map[string]any, _ map[string]any) {
			c, _ := done[1]["content"].([]any)
			p, _ := c[0].(map[string]any)
			if str(p, "type") != "refusal" || str(p, "refusal") != refusalText || count(evs, "response.refusal.delta") < 2 {
				t.Errorf("refusal part = %v", p)
			}
		}},
		{"[[length]]", "", []string{"reasoning", "message"}, "response.incomplete", incompleteCheck("max_output_tokens")},
		{"[[content_filter]]", "", []string{"reasoning", "message"}, "response.incomplete", incompleteCheck("content_filter")},
		{"[[failed]]", "", []string{"reasoning"}, "response.failed", func(t *testing.T, _ []sseEvent, _ []map[string]any, term map[string]any) {
			r, _ := term["response"].(map[string]any)
			e, _ := r["error"].(map[string]any)
			if str(r, "status") != "failed" || str(e, "code") != "server_error" || str(e, "message") == "" {
				t.Errorf("failed response = %v", r)
			}
		}},
		{"[[error_flat]]", "", []string{"reasoning"}, "error", func(t *testing.T, _ []sseEvent, _ []map[string]any, term map[string]any) {
			if _, nested := term["error"]; nested || str(term, "code") != "server_error" || str(term, "message") == "" {
				t.Errorf("flat error = %v", term)
			}
			if v, ok := term["param"]; !ok || v != nil {
				t.Errorf("flat error param = %v", term)
			}
		}},
		{"[[error_nested:rate_limit_exceeded]]", "", []string{"reasoning"}, "error", func(t *testing.T, _ []sseEvent, _ []map[string]any, term map[string]any) {
			e, _ := term["error"].(map[string]any)
			if _, flat := term["code"]; flat || str(e, "code") != "rate_limit_exceeded" || str(e, "message") == "" {
				t.Errorf("nested error = %v", term)
			}
		}},
		{"[[cut]]", "", []string{"reasoning"}, "", func(t *testing.T, evs []sseEvent, _ []map[string]any, _ map[string]any) {
			if last := evs[len(evs)-1].Event; last != "response.output_text.delta" {
				t.Errorf("cut stream ends with %s", last)
			}
		}},
		{"[[slow:20ms]]", "", []string{"reasoning", "message"}, "response.completed", nil},
		{"[[echo_items]]", "", []string{"reasoning", "message"}, "response.completed", func(t *testing.T, _ []sseEvent, done []map[string]any, _ map[string]any) {
			var got []map[string]any
			if err := json.Unmarshal([]byte(msgText(done[1])), &got); err != nil || len(got) != 1 ||
				str(got[0], "type") != "message" || str(got[0], "role") != "user" {
				t.Errorf("echo_items text = %q", msgText(done[1]))
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.token+c.extra[:min(len(c.extra), 12)], func(t *testing.T) {
			status, b := post(t, ts, body("hello "+c.token, true, c.extra))
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, b)
			}
			evs := parseSSE(t, b)
			done, term := streamCheck(t, evs)
			if got := itemTypes(done); !reflect.DeepEqual(got, c.items) {
				t.Fatalf("done items %v, want %v", got, c.items)
			}
			if c.terminal == "" && term != nil || c.terminal != "" && str(term, "type") != c.terminal {
				t.Fatalf("terminal %v, want %q", term, c.terminal)
			}
			if c.terminal == "response.completed" || c.terminal == "response.incomplete" {
				if out := terminalOutput(t, term); !reflect.DeepEqual(out, done) {
					t.Errorf("terminal output differs from output_item.done items:\n%v\n%v", out, done)
				}
			}
			if c.check != nil {
				c.check(t, evs, done, term)
			}
		})
	}
}

// incompleteCheck verifies an incomplete terminal with the given reason.
func incompleteCheck(reason string) func(*testing.T, []sseEvent, []map[string]any, map[string]any) {
	return func(t *testing.T, _ []sseEvent, done []map[string]any, term map[string]any) {
		r, _ := term["response"].(map[string]any)
		d, _ := r["incomplete_details"].(map[string]any)
		if str(r, "status") != "incomplete" || str(d, "reason") != reason {
			t.Errorf("incomplete response = %v", r)
		}
		if str(done[1], "status") != "incomplete" || !strings.HasPrefix("echo: hello", msgText(done[1])) || msgText(done[1]) == "echo: hello" {
			t.Errorf("partial message = %v", done[1])
		}
	}
}

// msgText is the text of a message item's first content part.
func msgText(item map[string]any) string {
	c, _ := item["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	p, _ := c[0].(map[string]any)
	return str(p, "text")
}

// count counts events of a type.
func count(evs []sseEvent, typ string) int {
	n := 0
	for _, e := range evs {
		if e.Event == typ {
			n++
		}
	}
	return n
}

func TestMalformedStream(t *testing.T) {
	_, ts := newTest(t, Options{})
	status, b := post(t, ts, body("[[malformed]]", true, ""))
	if status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	evs := parseSSE(t, b)
	last := evs[len(evs)-1]
	if last.Obj != nil || json.Valid(last.Data) {
		t.Fatalf("last data line is valid JSON: %s", last.Data)
	}
	if _, term := streamCheck(t, evs[:len(evs)-1]); term != nil {
		t.Fatalf("terminal before malformed line: %v", term)
	}
}

func TestHTTPErrorScenario(t *testing.T) {
	_, ts := newTest(t, Options{})
	for _, c := range []struct {
		status int
		code   string
	}{{429, "rate_limit_exceeded"}, {500, "server_error"}, {503, "server_is_overloaded"}} {
		for _, stream := range []bool{true, false} {
			st, b := post(t, ts, body(fmt.Sprintf("x [[http_error:%d]]", c.status), stream, ""))
			if st != c.status {
				t.Fatalf("status %d, want %d", st, c.status)
			}
			if _, _, _, code := apiErr(t, b); code != c.code {
				t.Errorf("code %v, want %s", code, c.code)
			}
		}
	}
}

func TestScenarioJSON(t *testing.T) {
	_, ts := newTest(t, Options{})
	tools := `"tools":` + testTools
	cases := []struct {
		token, extra, status string
		items                []string
	}{
		{"", "", "completed", []string{"reasoning", "message"}},
		{"[[tool]]", tools, "completed", []string{"reasoning", "function_call"}},
		{"[[parallel_tools]]", tools, "completed", []string{"reasoning", "function_call", "function_call"}},
		{"[[custom_tool]]", tools, "completed", []string{"reasoning", "custom_tool_call"}},
		{"[[refusal]]", "", "completed", []string{"reasoning", "message"}},
		{"[[length]]", "", "incomplete", []string{"reasoning", "message"}},
		{"[[content_filter]]", "", "incomplete", []string{"reasoning", "message"}},
		{"[[failed]]", "", "failed", []string{}},
		{"[[drift]]", "", "completed", []string{"reasoning", "message"}},
	}
	for _, c := range cases {
		st, b := post(t, ts, body("hello "+c.token, false, c.extra))
		if st != http.StatusOK {
			t.Fatalf("%s: status %d: %s", c.token, st, b)
		}
		var r map[string]any
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", c.token, err)
		}
		arr, _ := r["output"].([]any)
		items := make([]map[string]any, len(arr))
		for i, v := range arr {
			items[i], _ = v.(map[string]any)
		}
		if str(r, "object") != "response" || str(r, "status") != c.status || !reflect.DeepEqual(itemTypes(items), c.items) {
			t.Errorf("%s: status %q items %v", c.token, str(r, "status"), itemTypes(items))
		}
		for _, k := range []string{"id", "created_at", "model", "output", "usage", "tools", "tool_choice", "reasoning", "text", "parallel_tool_calls", "error", "incomplete_details"} {
			if _, ok := r[k]; !ok {
				t.Errorf("%s: response lacks %q", c.token, k)
			}
		}
	}
	// error_* without streaming: a 500 JSON error; cut: a truncated body; malformed: not JSON.
	if st, b := post(t, ts, body("[[error_flat]]", false, "")); st != 500 {
		t.Errorf("error_flat JSON status %d", st)
	} else {
		apiErr(t, b)
	}
	if st, b := post(t, ts, body("[[malformed]]", false, "")); st != 200 || json.Valid(b) {
		t.Errorf("malformed JSON: %d valid=%v", st, json.Valid(b))
	}
}

func TestCutJSONEndsEarly(t *testing.T) {
	_, ts := newTest(t, Options{})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(body("[[cut]]", false, "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || json.Valid(b) || len(b) == 0 {
		t.Fatalf("cut JSON: err %v, %d bytes", err, len(b))
	}
}

func TestCutAbortDropsConnection(t *testing.T) {
	_, ts := newTest(t, Options{})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(body("[[cut:abort]]", true, "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v, want unexpected EOF", err)
	}
	evs := parseSSE(t, b)
	if _, term := streamCheck(t, evs); term != nil || evs[len(evs)-1].Event != "response.output_text.delta" {
		t.Fatalf("aborted stream: %v", types(evs))
	}
}

func TestToolResultsDefault(t *testing.T) {
	s, ts := newTest(t, Options{})
	in := `{"model":"m","stream":false,"input":[
	 {"role":"user","content":"go [[parallel_tools]]"},
	 {"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{}"},
	 {"type":"custom_tool_call","call_id":"call_2","name":"ApplyPatch","input":"x"},
	 {"type":"function_call_output","call_id":"call_1","output":"a"},
	 {"type":"custom_tool_call_output","call_id":"call_2","output":[{"type":"input_text","text":"ok"}]}]}`
	st, b := post(t, ts, in)
	if st != 200 {
		t.Fatalf("status %d: %s", st, b)
	}
	var r map[string]any
	_ = json.Unmarshal(b, &r)
	out, _ := r["output"].([]any)
	msg, _ := out[1].(map[string]any)
	if got := msgText(msg); got != "tool results received: call_1, call_2" {
		t.Fatalf("text %q", got)
	}
	if sc := s.Requests()[0].Scenario; sc.Kind != KindToolResults {
		t.Fatalf("scenario %v", sc)
	}
}

func TestParseScenario(t *testing.T) {
	cases := []struct {
		in      string
		kind    Kind
		rest    string
		invalid bool
		delay   time.Duration
		status  int
	}{
		{"hello", KindText, "hello", false, 0, 0},
		{"hello [[parallel_tools]]", KindParallelTools, "hello", false, 0, 0},
		{"[[slow:50ms]] go", KindSlow, "go", false, 50 * time.Millisecond, 0},
		{"[[slow:abc]]", KindSlow, "", true, 0, 0},
		{"[[http_error:429]]", KindHTTPError, "", false, 0, 429},
		{"[[http_error:200]]", KindHTTPError, "", true, 0, 200},
		{"[[nope]]", "nope", "", true, 0, 0},
		{"[[tool:x]]", KindTool, "", true, 0, 0},
		{"[[cut:abort]]", KindCut, "", false, 0, 0},
		{"[[cut:later]]", KindCut, "", true, 0, 0},
	}
	for _, c := range cases {
		sc, rest := ParseScenario(c.in)
		if sc.Kind != c.kind || rest != c.rest || (sc.Invalid != "") != c.invalid || sc.Delay != c.delay || sc.Status != c.status {
			t.Errorf("ParseScenario(%q) = %+v, %q", c.in, sc, rest)
		}
	}
}

func TestInvalidScenarioTokenFailsLoudly(t *testing.T) {
	s, ts := newTest(t, Options{})
	st, b := post(t, ts, body("[[paralel_tools]]", true, ""))
	if _, _, _, code := apiErr(t, b); st != 400 || code != "fake_invalid_scenario" {
		t.Fatalf("status %d code %v", st, code)
	}
	if r := s.Requests()[0]; r.Rejected != "fake_invalid_scenario" || r.ResponseID != "" {
		t.Fatalf("recorded %+v", r)
	}
}

func TestSetScript(t *testing.T) {
	s, ts := newTest(t, Options{})
	s.SetScript(func(r *Request) Scenario {
		if r.UserText() != "plain" {
			t.Errorf("UserText = %q", r.UserText())
		}
		return Scenario{Kind: KindText, Text: "scripted"}
	})
	_, b := post(t, ts, body("plain [[refusal]]", false, ""))
	if !strings.Contains(string(b), `"text":"scripted"`) {
		t.Fatalf("script not used: %s", b)
	}
	s.SetScript(nil)
	_, b = post(t, ts, body("plain [[refusal]]", false, ""))
	if !strings.Contains(string(b), `"refusal":"`+strings.ReplaceAll(refusalText, "'", `\u0027`)) &&
		!strings.Contains(string(b), refusalText) {
		t.Fatalf("default script not restored: %s", b)
	}
}

func TestDeterministicOutput(t *testing.T) {
	a, tsA := newTest(t, Options{})
	_, tsB := newTest(t, Options{})
	_ = a
	_, b1 := post(t, tsA, body("same [[tool]]", true, `"tools":`+testTools))
	_, b2 := post(t, tsB, body("same [[tool]]", true, `"tools":`+testTools))
	if string(b1) != string(b2) {
		t.Fatal("same request on two fresh servers with the same secret gave different streams")
	}
}
