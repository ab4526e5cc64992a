package translate

import (
	"strings"
	"testing"
)

func TestCheckJSONMessages(t *testing.T) {
	deep := strings.Repeat("[", 10001) + strings.Repeat("]", 10001)
	cases := []struct {
		name, body, want string
	}{
		{"bom", "\xEF\xBB\xBF{\"model\":\"m\"}", "byte order mark (byte offset 0)"},
		{"syntax offset", `{"model":}`, "invalid JSON at byte offset 9."},
		{"first byte", `x`, "invalid JSON at byte offset 0."},
		{"truncated", `{"model":"m"`, "ends before the JSON value is complete"},
		{"nested too deeply", `{"model":"m","metadata":` + deep + `}`, "nested too deeply"},
		{"invalid utf-8 in text", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"ab\xff\xfecd\"}]}", "not valid UTF-8 (first invalid byte at offset 53)"},
		{"truncated utf-8", "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"\xe2\x82\"}]}", "not valid UTF-8 (first invalid byte at offset 51)"},
	}
	for _, tc := range cases {
		_, aerr := Translate([]byte(tc.body), &Config{})
		if aerr == nil || aerr.Status != 400 || !strings.Contains(aerr.Message, tc.want) {
			t.Errorf("%s: %v, want a 400 saying %q", tc.name, aerr, tc.want)
		}
	}
	ok := "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"caf\xc3\xa9 \\ud83d\\ude00\"}]}"
	if _, aerr := Translate([]byte(ok), &Config{}); aerr != nil {
		t.Fatalf("valid UTF-8 refused: %v", aerr)
	}
}

func TestMessageMembers(t *testing.T) {
	call := func(name string) string {
		return `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":` + name + `,"arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`
	}
	cases := []struct {
		name, body, param, code string
	}{
		{"empty function name", call(`""`), "messages[1].tool_calls[0].function.name", "empty_string"},
		{"empty custom name", `{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"","input":"x"}}]}]}`, "messages[0].tool_calls[0].custom.name", "empty_string"},
		{"unknown message key", `{"model":"m","messages":[{"role":"user","content":"hi","mood":"happy"}]}`, "messages[0].mood", "unknown_parameter"},
		{"unknown part key", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{}}]}]}`, "messages[0].content[0].cache_control", "unknown_parameter"},
	}
	for _, tc := range cases {
		_, aerr := Translate([]byte(tc.body), &Config{})
		if aerr == nil || aerr.Status != 400 || aerr.Param != tc.param || aerr.Code != tc.code {
			t.Errorf("%s: %+v, want 400 %s %s", tc.name, aerr, tc.param, tc.code)
		}
	}
	for _, body := range []string{
		call(`"f"`),
		// documented message members without a Responses counterpart
		`{"model":"m","messages":[{"role":"user","name":"ann","content":"hi"},{"role":"assistant","content":"yo","refusal":null,"annotations":[],"audio":null}]}`,
		// a Responses-style part is forwarded as it is
		`{"model":"m","messages":[{"role":"user","content":[{"type":"input_text","text":"hi","extra":1}]}]}`,
	} {
		if _, aerr := Translate([]byte(body), &Config{}); aerr != nil {
			t.Errorf("%s: %v", body, aerr)
		}
	}
}
