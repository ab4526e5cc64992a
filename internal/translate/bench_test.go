package translate

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// cursorBody builds a realistic Cursor agent request of at least size
// bytes: a system prompt, function and custom tools, and turns of user
// questions, assistant tool calls (read_file, grep, ApplyPatch returned as
// a function call) and tool results with source code.
func cursorBody(size int) []byte {
	type fn struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Parameters  any    `json:"parameters"`
	}
	obj := func(props ...string) any {
		p := map[string]any{}
		for _, k := range props {
			p[k] = map[string]string{"type": "string", "description": "The " + k + "."}
		}
		return map[string]any{"type": "object", "properties": p, "required": props}
	}
	tools := []any{
		map[string]any{"type": "function", "function": fn{"read_file", "Read a file from the workspace.", obj("path")}},
		map[string]any{"type": "function", "function": fn{"grep", "Search the workspace with a regular expression.", obj("pattern", "path")}},
		map[string]any{"type": "function", "function": fn{"run_terminal_cmd", "Run a shell command.", obj("command", "cwd")}},
		map[string]any{"type": "custom", "name": "ApplyPatch", "description": "Apply a patch to files.",
			"format": map[string]string{"type": "grammar", "syntax": "lark",
				"definition": "start: begin_patch hunk+ end_patch\nbegin_patch: \"*** Begin Patch\" LF\nend_patch: \"*** End Patch\" LF?\n"}},
	}
	code := strings.Repeat("func handle(w http.ResponseWriter, r *http.Request) {\n\tif err := parseConfig(r.Context()); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n", 12)
	msgs := []any{map[string]any{"role": "system", "content": "You are a powerful agentic AI coding assistant working in Cursor. " + strings.Repeat("Follow the user's instructions carefully. ", 20)}}
	body := func() []byte {
		b, _ := json.Marshal(map[string]any{"model": "gpt-5.2", "stream": true, "stream_options": map[string]bool{"include_usage": true},
			"user": "cursor-user", "tools": tools, "messages": msgs})
		return b
	}
	for turn := 0; ; turn++ {
		if b := body(); len(b) >= size {
			return b
		}
		read, patch := fmt.Sprintf("call_r%d", turn), fmt.Sprintf("call_p%d", turn)
		msgs = append(msgs,
			map[string]any{"role": "user", "content": []any{map[string]string{"type": "text", "text": fmt.Sprintf("Step %d: fix the error handling in server.go and explain.", turn)}}},
			map[string]any{"role": "assistant", "content": "Let me read the file first.", "tool_calls": []any{
				map[string]any{"id": read, "type": "function", "function": map[string]string{"name": "read_file", "arguments": `{"path":"server.go"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": read, "content": code},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{
				map[string]any{"id": patch, "type": "function", "function": map[string]string{"name": "ApplyPatch",
					"arguments": "*** Begin Patch\n*** Update File: server.go\n@@\n-\t\thttp.Error(w, err.Error(), 500)\n+\t\thttp.Error(w, \"bad config\", 400)\n*** End Patch\n"}}}},
			map[string]any{"role": "tool", "tool_call_id": patch, "content": "Done!"},
			map[string]any{"role": "assistant", "content": "I changed the status code to 400 and hid the internal error."},
		)
	}
}

func benchTranslate(b *testing.B, size int) {
	body := cursorBody(size)
	cfg := testConfig()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		req, aerr := Translate(body, cfg)
		if aerr != nil {
			b.Fatal(aerr)
		}
		if _, err := req.Body(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslate20KB measures Translate plus Body on a 20 KB history.
func BenchmarkTranslate20KB(b *testing.B) { benchTranslate(b, 20<<10) }

// BenchmarkTranslate200KB measures Translate plus Body on a 200 KB history.
func BenchmarkTranslate200KB(b *testing.B) { benchTranslate(b, 200<<10) }

// BenchmarkStreamEvent measures one response.output_text.delta event.
func BenchmarkStreamEvent(b *testing.B) {
	data := []byte(`{"type":"response.output_text.delta","sequence_number":11,"item_id":"msg_A1","output_index":1,"content_index":0,"delta":" = 391","logprobs":[]}`)
	s := NewStream(streamOpts)
	dst, _, _ := s.Event(nil, "response.created", []byte(evCreated))
	dst, _, _ = s.Event(dst, "", []byte(`{"type":"response.output_item.added","output_index":1,"item":{"id":"msg_A1","type":"message","content":[]}}`))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		var err error
		dst, _, err = s.Event(dst[:0], "response.output_text.delta", data)
		if err != nil {
			b.Fatal(err)
		}
	}
}

func TestCursorBodyTranslates(t *testing.T) {
	body := cursorBody(20 << 10)
	req, aerr := Translate(body, testConfig())
	if aerr != nil {
		t.Fatal(aerr)
	}
	custom, outputs := 0, 0
	for _, it := range req.Input {
		s := string(it)
		if strings.HasPrefix(s, `{"type":"custom_tool_call",`) {
			custom++
		}
		if strings.HasPrefix(s, `{"type":"custom_tool_call_output",`) {
			outputs++
		}
	}
	if custom == 0 || custom != outputs {
		t.Errorf("custom calls %d, outputs %d", custom, outputs)
	}
}
