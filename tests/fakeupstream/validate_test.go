package fakeupstream

import (
	"net/http"
	"strings"
	"testing"
)

// wrap builds a request body from top-level members after model.
func wrap(members string) string {
	if members == "" {
		return `{"model":"gpt-5.2","input":"hi"}`
	}
	return `{"model":"gpt-5.2",` + members + `}`
}

func TestValidationRejects(t *testing.T) {
	_, ts := newTest(t, Options{})
	user := `"input":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body, code, param, msg string
	}{
		{"not json", `{"model":`, "", "", "could not parse the JSON body"},
		{"array body", `[]`, "invalid_type", "", ""},
		{"missing model", `{"input":"hi"}`, "missing_required_parameter", "model", "Missing required parameter: 'model'."},
		{"missing input", `{"model":"m"}`, "missing_required_parameter", "input", ""},
		{"messages", wrap(`"messages":[]`), "unknown_parameter", "messages", "Unknown parameter: 'messages'."},
		{"max_tokens", wrap(`"input":"x","max_tokens":5`), "unknown_parameter", "max_tokens", ""},
		{"max_completion_tokens", wrap(`"input":"x","max_completion_tokens":5`), "unknown_parameter", "max_completion_tokens", ""},
		{"reasoning_effort", wrap(`"input":"x","reasoning_effort":"low"`), "unknown_parameter", "reasoning_effort", "Unknown parameter: 'reasoning_effort'."},
		{"response_format", wrap(`"input":"x","response_format":{"type":"text"}`), "unknown_parameter", "response_format", ""},
		{"n", wrap(`"input":"x","n":1`), "unknown_parameter", "n", ""},
		{"stop", wrap(`"input":"x","stop":["a"]`), "unknown_parameter", "stop", ""},
		{"include_usage", wrap(`"input":"x","stream":true,"stream_options":{"include_usage":true}`), "unknown_parameter", "stream_options.include_usage", ""},
		{"stream type", wrap(`"input":"x","stream":"yes"`), "invalid_type", "stream", "Invalid type for 'stream': expected a boolean, but got a string instead."},
		{"include value", wrap(`"input":"x","include":["reasoning.content"]`), "invalid_value", "include[0]", ""},
		{"max_output_tokens", wrap(`"input":"x","max_output_tokens":5`), "integer_below_min_value", "max_output_tokens", ""},
		{"effort", wrap(`"input":"x","reasoning":{"effort":"huge"}`), "invalid_value", "reasoning.effort", ""},
		{"previous_response_id", wrap(`"input":"x","previous_response_id":"resp_1"`), "previous_response_not_found", "previous_response_id", ""},
		{"input type", wrap(`"input":5`), "invalid_type", "input", ""},
		{"role", wrap(`"input":[{"role":"tool","content":"x"}]`), "invalid_value", "input[0].role", ""},
		{"item type", wrap(`"input":[{"type":"function","content":"x"}]`), "invalid_value", "input[0].type", ""},
		{"no type no role", wrap(`"input":[{"content":"x"}]`), "missing_required_parameter", "input[0].type", ""},
		{"chat image part", wrap(`"input":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]`), "invalid_value", "input[0].content[0].type", ""},
		{"image without detail", wrap(`"input":[{"role":"user","content":[{"type":"input_image","image_url":"data:x"}]}]`), "missing_required_parameter", "input[0].content[0].detail", ""},
		{"audio part", wrap(`"input":[{"role":"user","content":[{"type":"input_audio","input_audio":{}}]}]`), "invalid_value", "input[0].content[0].type", ""},
		{"assistant input_text", wrap(`"input":[{"role":"assistant","content":[{"type":"input_text","text":"x"}]}]`), "invalid_value", "input[0].content[0].type", "Supported values are: 'output_text' and 'refusal'."},
		{"message name", wrap(`"input":[{"role":"user","content":"x","name":"bob"}]`), "unknown_parameter", "input[0].name", ""},
		{"args object", wrap(`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]`), "invalid_type", "input[0].arguments", ""},
		{"call without call_id", wrap(`"input":[{"type":"function_call","name":"f","arguments":"{}"}]`), "missing_required_parameter", "input[0].call_id", ""},
		{"orphan output", wrap(`"input":[{"type":"function_call_output","call_id":"call_9","output":"x"}]`), "", "input", "No tool call found for function call output with call_id call_9."},
		{"output before call", wrap(`"input":[{"type":"function_call_output","call_id":"c","output":"x"},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`), "", "input", "No tool call found"},
		{"custom output for function call", wrap(`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"custom_tool_call_output","call_id":"c","output":"x"}]`), "", "input", "No tool call found for custom tool call output with call_id c."},
		{"reasoning without summary", wrap(`"input":[{"type":"reasoning","encrypted_content":"gAAAAB"}]`), "missing_required_parameter", "input[0].summary", ""},
		{"nested function tool", wrap(user + `,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}]`), "missing_required_parameter", "tools[0].name", ""},
		{"tool without strict", wrap(user + `,"tools":[{"type":"function","name":"f","parameters":{}}]`), "missing_required_parameter", "tools[0].strict", ""},
		{"tool without parameters", wrap(user + `,"tools":[{"type":"function","name":"f","strict":true}]`), "missing_required_parameter", "tools[0].parameters", ""},
		{"nested custom tool", wrap(user + `,"tools":[{"type":"custom","custom":{"name":"f"}}]`), "missing_required_parameter", "tools[0].name", ""},
		{"nested grammar", wrap(user + `,"tools":[{"type":"custom","name":"f","format":{"type":"grammar","grammar":{"definition":"x","syntax":"lark"}}}]`), "missing_required_parameter", "tools[0].format.definition", ""},
		{"hosted tool", wrap(user + `,"tools":[{"type":"web_search"}]`), "invalid_value", "tools[0].type", ""},
		{"nested tool_choice", wrap(user + `,"tools":[{"type":"function","name":"f","parameters":null,"strict":null}],"tool_choice":{"type":"function","function":{"name":"f"}}`), "missing_required_parameter", "tool_choice.name", ""},
		{"tool_choice unknown tool", wrap(user + `,"tools":[{"type":"function","name":"f","parameters":null,"strict":null}],"tool_choice":{"type":"function","name":"g"}`), "invalid_value", "tool_choice", ""},
		{"tool_choice string", wrap(user + `,"tool_choice":"any"`), "invalid_value", "tool_choice", ""},
		{"allowed_tools nested", wrap(user + `,"tool_choice":{"type":"allowed_tools","allowed_tools":{"mode":"auto","tools":[]}}`), "unknown_parameter", "tool_choice.allowed_tools", ""},
		{"nested json_schema", wrap(user + `,"text":{"format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}}`), "missing_required_parameter", "text.format.name", ""},
		{"json_schema no schema", wrap(user + `,"text":{"format":{"type":"json_schema","name":"x"}}`), "missing_required_parameter", "text.format.schema", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, b := post(t, ts, c.body)
			if st != http.StatusBadRequest {
				t.Fatalf("status %d: %s", st, b)
			}
			msg, typ, param, code := apiErr(t, b)
			if typ != "invalid_request_error" {
				t.Errorf("type %q", typ)
			}
			if (c.code == "" && code != nil) || (c.code != "" && code != c.code) {
				t.Errorf("code %v, want %q (%s)", code, c.code, msg)
			}
			if (c.param == "" && param != nil) || (c.param != "" && param != c.param) {
				t.Errorf("param %v, want %q (%s)", param, c.param, msg)
			}
			if !strings.Contains(msg, c.msg) {
				t.Errorf("message %q lacks %q", msg, c.msg)
			}
		})
	}
}

func TestValidationAccepts(t *testing.T) {
	_, ts := newTest(t, Options{})
	// A request shaped like WIRE §6b's relay output, plus every optional
	// shape the relay may use.
	full := `{"model":"gpt-5.2","stream":true,"store":false,"include":["reasoning.encrypted_content"],
	 "reasoning":{"effort":"medium","summary":"auto"},"parallel_tool_calls":true,"user":"u-1",
	 "instructions":"be brief","max_output_tokens":4096,"temperature":1,"top_p":0.9,"service_tier":"auto",
	 "prompt_cache_key":"k","safety_identifier":"s","metadata":{"a":"b"},"truncation":"auto",
	 "stream_options":{"include_obfuscation":false},
	 "text":{"format":{"type":"json_schema","name":"out","schema":{"type":"object"},"strict":true},"verbosity":"low"},
	 "tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{"type":"function","name":"read_file"},{"type":"custom","name":"ApplyPatch"}]},
	 "tools":` + testTools + `,
	 "input":[
	  {"type":"message","role":"system","content":"You are a coding assistant."},
	  {"type":"message","role":"developer","content":[{"type":"input_text","text":"rules"}]},
	  {"type":"message","role":"user","content":[{"type":"input_text","text":"look"},
	    {"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"},
	    {"type":"input_file","file_data":"data:application/pdf;base64,AAAA","filename":"a.pdf"}]},
	  {"type":"message","role":"assistant","phase":"commentary","content":[{"type":"output_text","text":"ok","annotations":[]},{"type":"refusal","refusal":"no"}]},
	  {"type":"function_call","call_id":"call_Xa1","name":"read_file","arguments":"{\"path\":\"a\"}"},
	  {"type":"custom_tool_call","call_id":"call_Xb2","name":"ApplyPatch","input":"*** Begin Patch"},
	  {"type":"function_call_output","call_id":"call_Xa1","output":"text"},
	  {"type":"custom_tool_call_output","call_id":"call_Xb2","output":"done"},
	  {"role":"user","content":"next"}]}`
	for _, b := range []string{full, wrap(""), wrap(`"input":"x","tool_choice":"required","tools":[],"reasoning":null,"store":null`)} {
		if st, body := post(t, ts, b); st != http.StatusOK {
			t.Errorf("valid request rejected: %d %s", st, body)
		}
	}
}

func TestHTTPLevelErrors(t *testing.T) {
	s, ts := newTest(t, Options{})
	do := func(method, path, key, ctype, body string) (int, []byte) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", method, path, ct)
		}
		return resp.StatusCode, b[:n]
	}
	good := wrap("")
	cases := []struct {
		method, path, key, ctype string
		status                   int
		rejected                 string
	}{
		{"POST", "/v1/chat/completions", testKey, "application/json", 404, "not_found"},
		{"POST", "/v1/responses", "", "application/json", 401, "unauthorized"},
		{"POST", "/v1/responses", "sk-wrong", "application/json", 401, "invalid_api_key"},
		{"GET", "/v1/responses", testKey, "", 405, "method_not_allowed"},
		{"POST", "/v1/responses", testKey, "text/plain", 400, "invalid_request_error"},
		{"POST", "/v1/responses", testKey, "application/json; charset=utf-8", 200, ""},
		{"POST", "/responses", testKey, "application/json", 200, ""},
	}
	for _, c := range cases {
		s.Reset()
		st, b := do(c.method, c.path, c.key, c.ctype, good)
		if st != c.status {
			t.Errorf("%s %s key=%q: status %d, want %d: %s", c.method, c.path, c.key, st, c.status, b)
			continue
		}
		if st != 200 {
			apiErr(t, b)
		}
		if r := s.Requests(); len(r) != 1 || r[0].Rejected != c.rejected || r[0].Status != c.status {
			t.Errorf("%s %s: recorded %+v", c.method, c.path, r)
		}
	}
}
