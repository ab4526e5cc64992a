package translate

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestTranslateRejects(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body, param, code string
	}{
		{"invalid json", `{"model":`, "", ""},
		{"not an object", `[1,2]`, "", ""},
		{"null body", `null`, "", ""},
		{"missing model", `{` + msgs + `}`, "model", codeMissing},
		{"model not string", `{"model":3,` + msgs + `}`, "model", codeInvalidType},
		{"empty model", `{"model":"",` + msgs + `}`, "model", codeInvalidValue},
		{"missing messages", `{"model":"m"}`, "messages", codeMissing},
		{"empty messages", `{"model":"m","messages":[]}`, "messages", codeInvalidValue},
		{"messages not array", `{"model":"m","messages":{}}`, "messages", codeInvalidType},
		{"unknown field", `{"model":"m",` + msgs + `,"bogus":1}`, "bogus", codeUnknownParameter},
		{"unknown null field", `{"model":"m",` + msgs + `,"bogus":null}`, "bogus", codeUnknownParameter},
		{"assistant function_call", `{"model":"m","messages":[{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}]}`, "messages[0].function_call", codeUnsupportedParam},
		{"include on chat", `{"model":"m",` + msgs + `,"include":["x"]}`, "include", codeUnknownParameter},
		{"n two", `{"model":"m",` + msgs + `,"n":2}`, "n", codeUnsupportedValue},
		{"n zero", `{"model":"m",` + msgs + `,"n":0}`, "n", codeUnsupportedValue},
		{"n string", `{"model":"m",` + msgs + `,"n":"1"}`, "n", codeInvalidType},
		{"stop string", `{"model":"m",` + msgs + `,"stop":"x"}`, "stop", codeUnsupportedParam},
		{"stop array", `{"model":"m",` + msgs + `,"stop":["x"]}`, "stop", codeUnsupportedParam},
		{"logprobs true", `{"model":"m",` + msgs + `,"logprobs":true}`, "logprobs", codeUnsupportedValue},
		{"top_logprobs", `{"model":"m",` + msgs + `,"top_logprobs":2}`, "top_logprobs", codeUnsupportedParam},
		{"modalities audio", `{"model":"m",` + msgs + `,"modalities":["text","audio"]}`, "modalities", codeUnsupportedValue},
		{"audio", `{"model":"m",` + msgs + `,"audio":{"voice":"alloy","format":"mp3"}}`, "audio", codeUnsupportedParam},
		{"web_search_options", `{"model":"m",` + msgs + `,"web_search_options":{}}`, "web_search_options", codeUnsupportedParam},
		{"functions", `{"model":"m",` + msgs + `,"functions":[{"name":"f"}]}`, "functions", codeUnsupportedParam},
		{"function_call", `{"model":"m",` + msgs + `,"function_call":"auto"}`, "function_call", codeUnsupportedParam},
		{"role function", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"function","name":"f","content":"x"}]}`, "messages[1].role", codeUnsupportedValue},
		{"role unknown", `{"model":"m","messages":[{"role":"robot","content":"a"}]}`, "messages[0].role", codeInvalidValue},
		{"role missing", `{"model":"m","messages":[{"content":"a"}]}`, "messages[0].role", codeMissing},
		{"message not object", `{"model":"m","messages":["hi"]}`, "messages[0]", codeInvalidType},
		{"input_audio", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"},{"role":"user","content":[{"type":"text","text":"t"},{"type":"input_audio","input_audio":{"data":"AA","format":"wav"}}]}]}`, "messages[3].content[1]", codeUnsupportedValue},
		{"user content missing", `{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content", codeMissing},
		{"image in system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`, "messages[0].content[0].type", codeInvalidValue},
		{"text part not string", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0].text", codeInvalidType},
		{"tool call without id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].id", codeMissing},
		{"tool call args object", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":{}}}]}]}`, "messages[0].tool_calls[0].function.arguments", codeInvalidType},
		{"tool without call id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id", codeMissing},
		{"tool image part", `{"model":"m","messages":[{"role":"tool","tool_call_id":"c","content":[{"type":"image_url","image_url":{"url":"u"}}]}]}`, "messages[0].content[0].type", codeInvalidValue},
		{"tools not array", `{"model":"m",` + msgs + `,"tools":{}}`, "tools", codeInvalidType},
		{"tool hosted", `{"model":"m",` + msgs + `,"tools":[{"type":"web_search"}]}`, "tools[0].type", codeInvalidValue},
		{"tool no name", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"parameters":{}}}]}`, "tools[0].function.name", codeMissing},
		{"tool params array", `{"model":"m",` + msgs + `,"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools[0].function.parameters", codeInvalidType},
		{"response_format bad", `{"model":"m",` + msgs + `,"response_format":{"type":"yaml"}}`, "response_format.type", codeInvalidValue},
		{"json_schema no name", `{"model":"m",` + msgs + `,"response_format":{"type":"json_schema","json_schema":{"schema":{}}}}`, "response_format.json_schema.name", codeMissing},
		{"stream not bool", `{"model":"m",` + msgs + `,"stream":"yes"}`, "stream", codeInvalidType},
		{"include_usage not bool", `{"model":"m",` + msgs + `,"stream_options":{"include_usage":1}}`, "stream_options.include_usage", codeInvalidType},
		{"effort not string", `{"model":"m",` + msgs + `,"reasoning_effort":1}`, "reasoning_effort", codeInvalidType},
		{"max tokens string", `{"model":"m",` + msgs + `,"max_completion_tokens":"9"}`, "max_completion_tokens", codeInvalidType},
		{"input empty", `{"model":"m","input":[]}`, "input", codeInvalidValue},
		{"input empty string", `{"model":"m","input":""}`, "input", codeInvalidValue},
		{"input number", `{"model":"m","input":5}`, "input", codeInvalidType},
		{"input item not object", `{"model":"m","input":[{"role":"user","content":"a"},7]}`, "input[1]", codeInvalidType},
		{"responses include not array", `{"model":"m","input":"a","include":"x"}`, "include", codeInvalidType},
		{"responses include not strings", `{"model":"m","input":"a","include":[1]}`, "include", codeInvalidType},
		{"responses reasoning not object", `{"model":"m","input":"a","reasoning":"high"}`, "reasoning", codeInvalidType},
		{"responses missing model", `{"input":"a"}`, "model", codeMissing},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, aerr := Translate([]byte(tc.body), testConfig())
			if aerr == nil {
				t.Fatalf("accepted: %+v", req)
			}
			if aerr.HTTPStatus() != http.StatusBadRequest || aerr.Type != "invalid_request_error" {
				t.Errorf("status %d type %q", aerr.HTTPStatus(), aerr.Type)
			}
			if aerr.Param != tc.param || aerr.Code != tc.code {
				t.Errorf("param %q code %q, want %q %q (%s)", aerr.Param, aerr.Code, tc.param, tc.code, aerr.Message)
			}
			if aerr.Message == "" {
				t.Error("empty message")
			}
		})
	}
}

func TestTranslateBadJSONMessageHasNoBody(t *testing.T) {
	_, aerr := Translate([]byte(`{"model":"secret-token-xyz", oops}`), testConfig())
	if aerr == nil || strings.Contains(aerr.Message, "secret") || strings.Contains(aerr.Message, "oops") {
		t.Fatalf("got %v", aerr)
	}
}

// translateOne translates body and returns the request and its upstream
// body decoded into a map.
func translateOne(t *testing.T, body string) (*Request, map[string]json.RawMessage) {
	t.Helper()
	req, aerr := Translate([]byte(body), testConfig())
	if aerr != nil {
		t.Fatalf("Translate: %v", aerr)
	}
	b, err := req.Body()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	return req, m
}

func TestTranslateMessages(t *testing.T) {
	cases := []struct {
		name, msgs, extra string
		want              []string // expected Input items
	}{
		{"user string", `[{"role":"user","content":"hi","name":"bob"}]`, "",
			[]string{`{"type":"message","role":"user","content":"hi"}`}},
		{"system string keeps role", `[{"role":"system","content":"s"},{"role":"user","content":"u"}]`, "",
			[]string{`{"type":"message","role":"system","content":"s"}`, `{"type":"message","role":"user","content":"u"}`}},
		{"developer parts", `[{"role":"developer","content":[{"type":"text","text":"d"}]}]`, "",
			[]string{`{"type":"message","role":"developer","content":[{"type":"input_text","text":"d"}]}`}},
		{"image default detail", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]`, "",
			[]string{`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"https://x/y.png","detail":"auto"}]}`}},
		{"image detail kept", `[{"role":"user","content":[{"type":"image_url","image_url":{"url":"u","detail":"low"}}]}]`, "",
			[]string{`{"type":"message","role":"user","content":[{"type":"input_image","image_url":"u","detail":"low"}]}`}},
		{"file", `[{"role":"user","content":[{"type":"file","file":{"file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}}]}]`, "",
			[]string{`{"type":"message","role":"user","content":[{"type":"input_file","file_data":"data:application/pdf;base64,AA","filename":"a.pdf"}]}`}},
		{"assistant string", `[{"role":"assistant","content":"a"}]`, "",
			[]string{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"a","annotations":[]}]}`}},
		{"assistant refusal field", `[{"role":"assistant","content":null,"refusal":"no"}]`, "",
			[]string{`{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}`}},
		{"assistant empty", `[{"role":"assistant","content":null}]`, "",
			[]string{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"","annotations":[]}]}`}},
		{"assistant null content with calls", `[{"role":"assistant","content":null,"audio":{"id":"a"},"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "",
			[]string{`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`}},
		{"assistant empty string with calls", `[{"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "",
			[]string{`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`}},
		{"assistant text and call", `[{"role":"assistant","content":"x","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}]`, "",
			[]string{`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x","annotations":[]}]}`, `{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`}},
		{"custom tool call nested", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"custom","custom":{"name":"P","input":"raw"}}]},{"role":"tool","tool_call_id":"c1","content":"ok"}]`, "",
			[]string{`{"type":"custom_tool_call","call_id":"c1","name":"P","input":"raw"}`, `{"type":"custom_tool_call_output","call_id":"c1","output":"ok"}`}},
		{"function call to custom tool", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ApplyPatch","arguments":"*** Begin"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]`,
			`,"tools":[{"type":"custom","name":"ApplyPatch","format":{"type":"text"}}]`,
			[]string{`{"type":"custom_tool_call","call_id":"c1","name":"ApplyPatch","input":"*** Begin"}`, `{"type":"custom_tool_call_output","call_id":"c1","output":"ab"}`}},
		{"function call to function tool", `[{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"ApplyPatch","arguments":"{}"}}]}]`,
			`,"tools":[{"type":"function","function":{"name":"ApplyPatch"}}]`,
			[]string{`{"type":"function_call","call_id":"c1","name":"ApplyPatch","arguments":"{}"}`}},
		{"tool result unknown call", `[{"role":"tool","tool_call_id":"zz","content":"r"}]`, "",
			[]string{`{"type":"function_call_output","call_id":"zz","output":"r"}`}},
		{"tool text parts escaped", `[{"role":"tool","tool_call_id":"zz","content":[{"type":"text","text":"a\"\n"},{"type":"text","text":"\u00e9"}]}]`, "",
			[]string{`{"type":"function_call_output","call_id":"zz","output":"a\"\né"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := translateOne(t, `{"model":"gpt-5.2","messages":`+tc.msgs+tc.extra+`}`)
			if len(req.Input) != len(tc.want) {
				t.Fatalf("got %d items: %s", len(req.Input), req.Input)
			}
			for i, w := range tc.want {
				if string(compact(t, req.Input[i])) != string(compact(t, []byte(w))) {
					t.Errorf("item %d\n got %s\nwant %s", i, req.Input[i], w)
				}
			}
		})
	}
}

func TestTranslateFields(t *testing.T) {
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body string
		want       map[string]string // field -> compact JSON; "" means absent
	}{
		{"tools flattened", `{"model":"gpt-5.2",` + msgs + `,"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g","parameters":{"type":"object"},"strict":false,"description":"G"}}]}`,
			map[string]string{"tools": `[{"type":"function","name":"f","parameters":null,"strict":null},{"type":"function","name":"g","description":"G","parameters":{"type":"object"},"strict":false}]`}},
		{"custom grammar unnested", `{"model":"gpt-5.2",` + msgs + `,"tools":[{"type":"custom","custom":{"name":"P","format":{"type":"grammar","grammar":{"definition":"start: x","syntax":"lark"}}}}]}`,
			map[string]string{"tools": `[{"type":"custom","name":"P","format":{"type":"grammar","definition":"start: x","syntax":"lark"}}]`}},
		{"flat custom as is", `{"model":"gpt-5.2",` + msgs + `,"tools":[{"type":"custom","name":"ApplyPatch","description":"d","format":{"type":"grammar","syntax":"lark","definition":"s"}}]}`,
			map[string]string{"tools": `[{"type":"custom","name":"ApplyPatch","description":"d","format":{"type":"grammar","syntax":"lark","definition":"s"}}]`}},
		{"tool_choice string", `{"model":"gpt-5.2",` + msgs + `,"tool_choice":"required"}`, map[string]string{"tool_choice": `"required"`}},
		{"tool_choice function", `{"model":"gpt-5.2",` + msgs + `,"tool_choice":{"type":"function","function":{"name":"f"}}}`, map[string]string{"tool_choice": `{"type":"function","name":"f"}`}},
		{"tool_choice custom", `{"model":"gpt-5.2",` + msgs + `,"tool_choice":{"type":"custom","custom":{"name":"P"}}}`, map[string]string{"tool_choice": `{"type":"custom","name":"P"}`}},
		{"response_format text", `{"model":"gpt-5.2",` + msgs + `,"response_format":{"type":"text"}}`, map[string]string{"text": `{"format":{"type":"text"}}`}},
		{"verbosity", `{"model":"gpt-5.2",` + msgs + `,"verbosity":"high"}`, map[string]string{"text": `{"verbosity":"high"}`}},
		{"max_tokens only", `{"model":"gpt-5.2",` + msgs + `,"max_tokens":10}`, map[string]string{"max_output_tokens": `10`, "max_tokens": ""}},
		{"max_completion preferred", `{"model":"gpt-5.2",` + msgs + `,"max_tokens":10,"max_completion_tokens":20}`, map[string]string{"max_output_tokens": `20`}},
		{"effort from request", `{"model":"gpt-5.2",` + msgs + `,"reasoning_effort":"minimal"}`, map[string]string{"reasoning": `{"effort":"minimal","summary":"auto"}`}},
		{"effort from alias", `{"model":"gpt-5.2",` + msgs + `}`, map[string]string{"reasoning": `{"effort":"medium","summary":"auto"}`}},
		{"effort from default", `{"model":"other",` + msgs + `}`, map[string]string{"reasoning": `{"effort":"low"}`, "model": `"other"`}},
		{"alias model sent", `{"model":"terse",` + msgs + `}`, map[string]string{"model": `"gpt-5.2-codex"`, "text": `{"verbosity":"low"}`}},
		{"alias verbosity yields to request", `{"model":"terse",` + msgs + `,"verbosity":"high"}`, map[string]string{"text": `{"verbosity":"high"}`}},
		{"eligible store forced", `{"model":"gpt-5.2",` + msgs + `,"store":true}`, map[string]string{"store": `false`, "include": `["reasoning.encrypted_content"]`}},
		{"non eligible store kept", `{"model":"fast",` + msgs + `,"store":true}`, map[string]string{"store": `true`, "include": "", "reasoning": ""}},
		{"non eligible no store", `{"model":"fast",` + msgs + `}`, map[string]string{"store": "", "include": ""}},
		{"non eligible alias values apply", `{"model":"plain",` + msgs + `}`, map[string]string{"reasoning": `{"summary":"concise"}`, "store": ""}},
		{"responses null reasoning gets defaults", `{"model":"gpt-5.2","input":"x","reasoning":null,"store":null,"user":null}`,
			map[string]string{"reasoning": `{"effort":"medium","summary":"auto"}`, "store": "false", "user": "null"}},
		{"non eligible own effort", `{"model":"fast",` + msgs + `,"reasoning_effort":"low"}`, map[string]string{"reasoning": `{"effort":"low"}`}},
		{"stream options consumed", `{"model":"gpt-5.2",` + msgs + `,"stream":true,"stream_options":{"include_usage":true}}`, map[string]string{"stream_options": "", "stream": "true"}},
		{"obfuscation forwarded", `{"model":"gpt-5.2",` + msgs + `,"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false}}`, map[string]string{"stream_options": `{"include_obfuscation":false}`}},
		{"obfuscation dropped without stream", `{"model":"gpt-5.2",` + msgs + `,"stream_options":{"include_obfuscation":false}}`, map[string]string{"stream_options": ""}},
		{"dropped fields", `{"model":"gpt-5.2",` + msgs + `,"seed":1,"logit_bias":{},"frequency_penalty":0,"presence_penalty":0,"prediction":{"type":"content","content":"x"},"logprobs":false,"n":1,"modalities":["text"]}`,
			map[string]string{"seed": "", "logit_bias": "", "frequency_penalty": "", "presence_penalty": "", "prediction": "", "logprobs": "", "n": "", "modalities": ""}},
		{"null fields ignored", `{"model":"gpt-5.2",` + msgs + `,"stop":null,"tools":null,"n":null,"store":null}`, map[string]string{"stop": "", "tools": ""}},
		{"passthrough", `{"model":"gpt-5.2",` + msgs + `,"user":"u","metadata":{"a":"b"},"service_tier":"flex","prompt_cache_key":"k","parallel_tool_calls":false,"temperature":0.2}`,
			map[string]string{"user": `"u"`, "metadata": `{"a":"b"}`, "service_tier": `"flex"`, "prompt_cache_key": `"k"`, "parallel_tool_calls": "false", "temperature": "0.2"}},
		{"responses with null messages", `{"model":"gpt-5.2","input":"x","messages":null}`, map[string]string{"messages": ""}},
		{"responses include dedup", `{"model":"gpt-5.2","input":"x","include":["a","reasoning.encrypted_content","a"],"store":true}`,
			map[string]string{"include": `["a","reasoning.encrypted_content"]`, "store": "false"}},
		{"responses non eligible untouched", `{"model":"fast","input":"x","include":["a","a"],"store":true}`,
			map[string]string{"include": `["a","a"]`, "store": "true", "model": `"gpt-4.1"`}},
		{"responses stream_options dropped", `{"model":"gpt-5.2","input":"x","stream_options":{"include_obfuscation":true}}`, map[string]string{"stream_options": ""}},
		{"responses reasoning kept", `{"model":"gpt-5.2","input":"x","reasoning":{"effort":"high","summary":"concise","context":"auto"}}`,
			map[string]string{"reasoning": `{"effort":"high","summary":"concise","context":"auto"}`}},
		{"responses passthrough", `{"model":"gpt-5.2","input":"x","tools":[{"type":"function","name":"f","parameters":null,"strict":true}],"instructions":"be nice","previous_response_id":"resp_1","weird":[1]}`,
			map[string]string{"tools": `[{"type":"function","name":"f","parameters":null,"strict":true}]`, "instructions": `"be nice"`, "previous_response_id": `"resp_1"`, "weird": "[1]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, m := translateOne(t, tc.body)
			for k, w := range tc.want {
				got, ok := m[k]
				if w == "" {
					if ok {
						t.Errorf("%s present: %s", k, got)
					}
					continue
				}
				if !ok {
					t.Errorf("%s absent", k)
					continue
				}
				if string(compact(t, got)) != string(compact(t, []byte(w))) {
					t.Errorf("%s = %s, want %s", k, got, w)
				}
			}
			if _, ok := m["input"]; !ok {
				t.Error("no input")
			}
		})
	}
}

func TestTranslateRequestMeta(t *testing.T) {
	req, _ := translateOne(t, `{"model":"fast","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a"}]}`)
	if req.Shape != ShapeChat || req.ClientModel != "fast" || req.Model != "gpt-4.1" || !req.Stream || !req.IncludeUsage || req.Eligible {
		t.Errorf("got %+v", req)
	}
	req, _ = translateOne(t, `{"model":"gpt-5.2","input":[{"role":"user","content":"a"}],"stream_options":{"include_usage":true}}`)
	if req.Shape != ShapeResponses || req.Stream || !req.IncludeUsage || !req.Eligible {
		t.Errorf("got %+v", req)
	}
	if ShapeChat.String() != "chat" || ShapeResponses.String() != "responses" || Shape(0).String() != "unknown" {
		t.Error("Shape.String")
	}
}

func TestHistoryChat(t *testing.T) {
	msgs := []string{
		`{"role":"system","content":"s"}`,
		`{"role":"user", "content":[{"type":"text","text":"u"}], "name":"n"}`,
		`{"role":"assistant","content":"a","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}]}`,
		`{"role":"tool","tool_call_id":"c1","content":"r1"}`,
		`{"role":"tool","tool_call_id":"c2","content":"r2"}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"c3","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	}
	req, _ := translateOne(t, `{"model":"gpt-5.2","messages":[`+strings.Join(msgs, " , ")+`]}`)
	wantRoles := []string{"system", "user", "assistant", "tool", "tool", "assistant"}
	wantItems := [][2]int{{0, 1}, {1, 2}, {2, 5}, {5, 6}, {6, 7}, {7, 8}}
	if len(req.History) != len(msgs) || len(req.Input) != 8 {
		t.Fatalf("history %d input %d", len(req.History), len(req.Input))
	}
	for i, h := range req.History {
		if string(h.Raw) != msgs[i] || h.Role != wantRoles[i] || h.Items != wantItems[i] {
			t.Errorf("history[%d] = %s %s %v", i, h.Raw, h.Role, h.Items)
		}
	}
}

func TestHistoryResponses(t *testing.T) {
	items := []string{
		`{"role":"user","content":"u"}`,
		`{"type":"reasoning","summary":[]}`,
		`{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}`,
		`{"type":"custom_tool_call","call_id":"d","name":"P","input":"x"}`,
		`{"type":"function_call_output","call_id":"c","output":"o"}`,
		`{"type":"custom_tool_call_output","call_id":"d","output":"o"}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"t"}]}`,
		`{"type":"item_reference","id":"x"}`,
	}
	req, _ := translateOne(t, `{"model":"gpt-5.2","input":[`+strings.Join(items, ",")+`]}`)
	wantRoles := []string{"user", "assistant", "assistant", "assistant", "tool", "tool", "assistant", ""}
	for i, h := range req.History {
		if string(h.Raw) != items[i] || h.Role != wantRoles[i] || h.Items != [2]int{i, i + 1} || string(req.Input[i]) != items[i] {
			t.Errorf("history[%d] = %s %q %v", i, h.Raw, h.Role, h.Items)
		}
	}
	req, _ = translateOne(t, `{"model":"gpt-5.2","input":"hello"}`)
	if len(req.History) != 1 || req.History[0].Role != "user" || req.History[0].Items != [2]int{0, 1} ||
		string(req.Input[0]) != `{"type":"message","role":"user","content":"hello"}` {
		t.Errorf("string input: %+v %s", req.History, req.Input)
	}
}

func TestBodyReplacedItems(t *testing.T) {
	req, _ := translateOne(t, `{"model":"gpt-5.2","messages":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}]}`)
	h := req.History[1]
	replaced := append([]json.RawMessage{}, req.Input[:h.Items[0]]...)
	replaced = append(replaced, json.RawMessage(`{"type":"reasoning","summary":[],"encrypted_content":"gA"}`),
		json.RawMessage(`{"type":"message","role":"assistant","id":"msg_1","content":[{"type":"output_text","text":"b","annotations":[]}]}`))
	replaced = append(replaced, req.Input[h.Items[1]:]...)
	req.Input = replaced
	b1, err := req.Body()
	if err != nil {
		t.Fatal(err)
	}
	b2, _ := req.Body()
	if string(b1) != string(b2) || !json.Valid(b1) || !strings.Contains(string(b1), `"encrypted_content":"gA"`) {
		t.Errorf("body %s", b1)
	}
	req.Input = append(req.Input, nil)
	if _, err := req.Body(); err == nil {
		t.Error("empty item accepted")
	}
	if v, ok := req.Field("model"); !ok || string(v) != `"gpt-5.2"` {
		t.Errorf("Field(model) = %s %v", v, ok)
	}
	if _, ok := req.Field("nope"); ok {
		t.Error("Field(nope) found")
	}
}

func TestResolveModel(t *testing.T) {
	var nilCfg *Config
	if a := nilCfg.ResolveModel("x"); a.Model != "x" || a.NoReasoning {
		t.Errorf("nil config: %+v", a)
	}
	cfg := &Config{Aliases: map[string]Alias{"a": {Effort: "high"}, "b": {Model: "real"}}}
	if a := cfg.ResolveModel("a"); a.Model != "a" || a.Effort != "high" {
		t.Errorf("a: %+v", a)
	}
	if a := cfg.ResolveModel("b"); a.Model != "real" {
		t.Errorf("b: %+v", a)
	}
	if a := cfg.ResolveModel("c"); a != (Alias{Model: "c"}) {
		t.Errorf("c: %+v", a)
	}
}
