package canonical

import (
	"encoding/json"
	"testing"
)

// classes lists groups of envelopes: envelopes in one group must hash
// equal, envelopes in different groups must not.
func checkClasses(t *testing.T, shape Shape, classes [][]string) {
	t.Helper()
	seen := map[string]int{}
	for ci, class := range classes {
		var first string
		for j, env := range class {
			out := canonEnvelope(t, shape, env)
			if j == 0 {
				first = out
				if prev, dup := seen[out]; dup {
					t.Errorf("%s class %d equals class %d: %s", shape, ci, prev, out)
				}
				seen[out] = ci
				continue
			}
			if out != first {
				t.Errorf("%s class %d member %d:\n  %s\n  -> %s\nwant %s", shape, ci, j, env, out, first)
			}
		}
	}
}

// canonEnvelope is the canonical text of any envelope (assistant or not).
func canonEnvelope(t *testing.T, shape Shape, env string) string {
	t.Helper()
	c := getCanon(DefaultLimits(), DefaultMaxNodes)
	defer putCanon(c)
	root, _, r := c.envelope(shape, []byte(env))
	if r != "" {
		t.Fatalf("%s: refused %s", env, r)
	}
	return string(c.bytes(root))
}

func TestChatEquivalences(t *testing.T) {
	checkClasses(t, ShapeChat, [][]string{
		{ // text string and exact text parts
			`{"role":"assistant","content":"hello world"}`,
			`{"content":"hello world","role":"assistant"}`,
			`{"role":"assistant","content":[{"type":"text","text":"hello world"}]}`,
			`{"role":"assistant","content":[{"text":"hello ","type":"text"},{"type":"text","text":"world"}]}`,
			`{"role":"assistant","content":"hello world","tool_calls":[],"refusal":null}`,
			`{"role":"assistant","content":"hello world","tool_calls":null,"function_call":null,"audio":null,"annotations":[]}`,
			" {\n \"role\" : \"assistant\", \"content\" : \"hello\\u0020world\" } ",
		},
		{ // empty forms
			`{"role":"assistant"}`,
			`{"role":"assistant","content":null}`,
			`{"role":"assistant","content":""}`,
			`{"role":"assistant","content":[]}`,
			`{"role":"assistant","content":[{"type":"text","text":""}]}`,
		},
		{ // redundant index dropped
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}},{"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
			`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}},{"index":1,"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
			`{"role":"assistant","content":[],"tool_calls":[{"index":0.0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}},{"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"},"index":1}]}`,
		},
		{ // an index that is not the position is kept
			`{"role":"assistant","content":null,"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}},{"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
		},
		{ // arguments are strings, never parsed
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\": \"a.ts\"}"}},{"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"}}]}`,
		},
		{ // tool call order matters
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_2","type":"function","function":{"name":"ls","arguments":"{}"}},{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}}]}`,
		},
		{`{"role":"assistant","content":"hello world!"}`},
		{`{"role":"assistant","content":"hello world","name":"bot"}`},
		{`{"role":"assistant","content":"hello world","refusal":"no"}`},
		{`{"role":"assistant","content":[{"type":"text","text":"hello world","cache":1}]}`}, // not an exact part
		{`{"role":"assistant","content":[{"type":"refusal","refusal":"hello world"}]}`},
		{`{"role":"assistant","content":"hello world","annotations":[{"type":"url"}]}`},
		{`{"role":"assistant","content":"hello world","x_unknown":{"nested":[1,2]}}`},
		{`{"role":"assistant","content":"hello world","x_unknown":{"nested":[2,1]}}`},
		// non-assistant messages are hashed as sent
		{`{"role":"user","content":"hello world"}`},
		{`{"role":"user","content":[{"type":"text","text":"hello world"}]}`},
		{`{"role":"user","content":"hello world","tool_calls":[]}`},
		{`{"role":"tool","tool_call_id":"call_1","content":"ok"}`},
		{`{"role":"tool","tool_call_id":"call_1","content":"ok","name":"read_file"}`},
		{`{"role":"tool","tool_call_id":"call_1","content":[{"type":"text","text":"ok"}]}`},
		{`{"role":"system","content":"be brief"}`},
		{`{"role":"developer","content":"be brief"}`},
	})
}

func TestResponsesEquivalences(t *testing.T) {
	checkClasses(t, ShapeResponses, [][]string{
		{ // assistant message forms
			`{"role":"assistant","content":"done"}`,
			`{"type":"message","role":"assistant","content":"done"}`,
			`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]}`,
			`{"type":"message","id":"msg_1","status":"completed","role":"assistant","content":[{"type":"output_text","text":"do","annotations":[],"logprobs":[]},{"type":"output_text","text":"ne"}]}`,
		},
		{ // phase stays
			`{"type":"message","role":"assistant","content":"done","phase":"final_answer"}`,
			`{"type":"message","id":"msg_9","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[]}],"phase":"final_answer"}`,
		},
		{
			`{"type":"message","role":"assistant"}`,
			`{"type":"message","role":"assistant","content":[]}`,
			`{"role":"assistant","content":null,"status":"completed"}`,
		},
		{ // function calls: id and status are not identity
			`{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.ts\"}"}`,
			`{"type":"function_call","id":"fc_1","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.ts\"}","status":"completed"}`,
		},
		{`{"type":"function_call","call_id":"call_2","name":"read_file","arguments":"{\"path\":\"a.ts\"}"}`},
		{`{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"b.ts\"}"}`},
		{
			`{"type":"custom_tool_call","call_id":"call_3","name":"ApplyPatch","input":"*** Begin Patch"}`,
			`{"type":"custom_tool_call","id":"ctc_3","call_id":"call_3","name":"ApplyPatch","input":"*** Begin Patch","status":"completed"}`,
		},
		{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"done","annotations":[{"type":"url_citation"}]}]}`},
		{`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"done"}]}`},
		// user input: string vs parts kept; easy form gets its type
		{
			`"hi there"`,
			`{"role":"user","content":"hi there"}`,
			`{"type":"message","role":"user","content":"hi there"}`,
		},
		{`{"type":"message","role":"user","content":[{"type":"input_text","text":"hi there"}]}`},
		{`{"type":"message","role":"user","content":"hi there","id":"msg_u"}`},
		// outputs and reasoning are hashed as sent, ids included
		{`{"type":"function_call_output","call_id":"call_1","output":"ok"}`},
		{`{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"ok"}]}`},
		{`{"type":"reasoning","id":"rs_1","summary":[],"encrypted_content":"gAAA"}`},
		{`{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}`},
	})
}

func TestNormalizeAssistant(t *testing.T) {
	got, err := NormalizeAssistant(ShapeChat, json.RawMessage(`{"tool_calls":[{"index":0,"type":"function","id":"c","function":{"arguments":"{\"a\":1.0}","name":"f"}}],"role":"assistant","content":null}`), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"content":"","role":"assistant","tool_calls":[{"function":{"arguments":"{\"a\":1.0}","name":"f"},"id":"c","type":"function"}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, err = NormalizeAssistant(ShapeResponses, json.RawMessage(`{"type":"function_call","id":"fc_1","call_id":"c","name":"f","arguments":"{}","status":"completed"}`), Limits{})
	if err != nil || string(got) != `{"arguments":"{}","call_id":"c","name":"f","type":"function_call"}` {
		t.Errorf("function_call: %s, %v", got, err)
	}
	for _, tc := range []struct {
		shape Shape
		env   string
	}{
		{ShapeChat, `{"role":"user","content":"x"}`},
		{ShapeResponses, `{"type":"function_call_output","call_id":"c","output":"x"}`},
		{ShapeResponses, `"x"`},
	} {
		if _, err := NormalizeAssistant(tc.shape, json.RawMessage(tc.env), Limits{}); err == nil {
			t.Errorf("%s %s: want an error for a non-assistant envelope", tc.shape, tc.env)
		}
	}
	if _, err := NormalizeAssistant(ShapeChat, json.RawMessage(`"x"`), Limits{}); refusedFor(t, err) != ReasonNotMessage {
		t.Errorf("chat string envelope: %v", err)
	}
}
