package fakeupstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// FuzzServe feeds arbitrary bodies through the whole handler: it must never
// panic and must always answer with a status the fake documents.
func FuzzServe(f *testing.F) {
	for _, seed := range []string{
		body("hello", true, ""), body("[[parallel_tools]]", false, `"tools":`+testTools),
		body("[[slow:1ns]]", true, ""), body("[[http_error:429]]", true, ""), body("[[malformed]]", false, ""),
		replay(reasoningItem("rs_x", "gAAAABAAAA")), `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`,
		`{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_file"}]}]}`,
		`{"model":"m","input":"x","tools":[{"type":"custom","name":"c","format":{"type":"grammar"}}],"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[{}]}}`,
		`{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n","schema":{}}},"metadata":{"a":1}}`,
		`null`, `[]`, `{"model":1}`, ``,
	} {
		f.Add(seed)
	}
	s := New(Options{APIKey: testKey, Secret: []byte("fuzz")})
	// Mutated [[slow:...]] tokens could pause for hours; keep the default
	// script but drop its pauses.
	s.SetScript(func(r *Request) Scenario {
		sc := DefaultScript(r)
		sc.Delay = 0
		return sc
	})
	f.Fuzz(func(t *testing.T, in string) {
		req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(in))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testKey)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		switch rec.Code {
		case 200, 400, 404, 429, 500, 503:
		default:
			if rec.Code < 400 || rec.Code > 599 {
				t.Fatalf("status %d for %q", rec.Code, in)
			}
		}
		s.Reset()
	})
}
