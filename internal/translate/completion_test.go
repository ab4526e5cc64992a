package translate

import (
	"encoding/json"
	"testing"
)

func TestChatCompletionErrors(t *testing.T) {
	cases := []struct {
		name, body string
		status     int
		typ, code  string
	}{
		{"rate limit", `{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}`, 429, "rate_limit_exceeded", "rate_limit_exceeded"},
		{"quota", `{"status":"failed","error":{"code":"insufficient_quota","message":"pay","type":"insufficient_quota"}}`, 429, "insufficient_quota", "insufficient_quota"},
		{"context", `{"status":"failed","error":{"code":"context_length_exceeded","message":"too long"}}`, 400, "invalid_request_error", "context_length_exceeded"},
		{"invalid prompt", `{"status":"failed","error":{"code":"invalid_prompt","message":"bad"}}`, 400, "invalid_request_error", "invalid_prompt"},
		{"server error", `{"status":"failed","error":{"code":"server_error","message":"oops","type":"server_error"}}`, 502, "upstream_error", "server_error"},
		{"failed without error", `{"status":"failed"}`, 502, "upstream_error", ""},
		{"in progress", `{"object":"response","status":"in_progress"}`, 502, "upstream_error", ""},
		{"queued", `{"status":"queued"}`, 502, "upstream_error", ""},
		{"cancelled", `{"status":"cancelled"}`, 502, "upstream_error", ""},
		{"no status", `{"object":"response","output":[]}`, 502, "upstream_error", ""},
		{"other object", `{"object":"chat.completion","status":"completed"}`, 502, "upstream_error", ""},
		{"not json", `<html>`, 502, "upstream_error", ""},
		{"array", `[]`, 502, "upstream_error", ""},
		{"bad item", `{"status":"completed","output":[{"type":1}]}`, 502, "upstream_error", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, aerr := ChatCompletion([]byte(tc.body), streamOpts)
			if aerr == nil {
				t.Fatalf("converted: %s", body)
			}
			if aerr.HTTPStatus() != tc.status || aerr.Type != tc.typ || aerr.Code != tc.code || aerr.Message == "" {
				t.Errorf("got %d %q %q %q", aerr.HTTPStatus(), aerr.Type, aerr.Code, aerr.Message)
			}
		})
	}
}

func TestConvertCompletionAccessors(t *testing.T) {
	body := readFile(t, "testdata/completions/text_and_calls.in.json")
	c, aerr := ConvertCompletion(body, streamOpts)
	if aerr != nil {
		t.Fatal(aerr)
	}
	if c.ResponseID != "resp_C1" || len(c.Output) != 4 || c.FinishReason != "tool_calls" || c.Usage.TotalTokens != 120 {
		t.Errorf("got %+v", c)
	}
	want := Sent{Content: "Applying the patch.", ToolCalls: []ToolCall{
		{ID: "call_P1", Name: "ApplyPatch", Arguments: "*** Begin Patch\n*** End Patch", Custom: true},
		{ID: "call_R1", Name: "read_file", Arguments: `{"path":"a"}`}}}
	if c.Sent.Content != want.Content || c.Sent.Refusal != "" || len(c.Sent.ToolCalls) != 2 ||
		c.Sent.ToolCalls[0] != want.ToolCalls[0] || c.Sent.ToolCalls[1] != want.ToolCalls[1] {
		t.Errorf("Sent %+v", c.Sent)
	}
	var m map[string]any
	if err := json.Unmarshal(c.Body, &m); err != nil {
		t.Fatal(err)
	}
}
