package translate

import (
	"encoding/json"
	"testing"
)

// TestSettings: the members with a place of their own in the cache scope
// are taken out of the body, the history, model and transport members are
// dropped and the rest is the configuration.
func TestSettings(t *testing.T) {
	r := &Request{Fields: []Field{
		{"model", json.RawMessage(`"gpt-5.2"`)}, {"input", json.RawMessage(`[]`)},
		{"stream", json.RawMessage(`true`)}, {"stream_options", json.RawMessage(`{}`)},
		{"reasoning", json.RawMessage(`{"effort":"high"}`)}, {"tools", json.RawMessage(`[{"type":"function"}]`)},
		{"max_output_tokens", json.RawMessage(`100`)}, {"store", json.RawMessage(`false`)},
		{"include", json.RawMessage(`["reasoning.encrypted_content"]`)},
		{"instructions", json.RawMessage(`"be brief"`)}, {"temperature", json.RawMessage(`1`)},
	}}
	s, err := r.Settings()
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Reasoning) != `{"effort":"high"}` || string(s.Tools) != `[{"type":"function"}]` ||
		s.MaxOutputTokens != 100 || s.Store || len(s.Include) != 1 {
		t.Fatalf("settings %+v", s)
	}
	if string(s.Config) != `{"instructions":"be brief","temperature":1}` {
		t.Fatalf("config %s", s.Config)
	}
	for _, bad := range []Field{{"max_output_tokens", json.RawMessage(`"x"`)}, {"store", json.RawMessage(`1`)}, {"include", json.RawMessage(`{}`)}} {
		if _, err := (&Request{Fields: []Field{bad}}).Settings(); err == nil {
			t.Errorf("%s %s accepted", bad.Key, bad.Value)
		}
	}
}
