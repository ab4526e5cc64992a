package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

func TestEffectiveOpenAIBeta(t *testing.T) {
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"responses=v1"}, "responses=v1"},
		{[]string{"a", "b"}, "a,b"},
		{[]string{"a, b", " c ,"}, "a,b,c"},
		{[]string{"b", "a"}, "b,a"},
	} {
		h := http.Header{}
		for _, v := range tc.in {
			h.Add("OpenAI-Beta", v)
		}
		if got := effectiveOpenAIBeta(h); got != tc.want {
			t.Errorf("%q: %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestScopeHasEveryOpenAIBetaValue is hole 3: every OpenAI-Beta header
// line is forwarded, so the scope must hold all of them. A conversation
// continued with a different second value must not get the reasoning
// produced under the first set; continued with the same set it does (so
// the test sees replay when it is allowed).
func TestScopeHasEveryOpenAIBetaValue(t *testing.T) {
	h, fake := startRelay(t, true)
	post := func(body string, beta ...string) (fakeupstream.Request, string) {
		t.Helper()
		req := chatRequest(strings.NewReader(body))
		for _, b := range beta {
			req.Header.Add("OpenAI-Beta", b)
		}
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("%d %s", rec.Code, rec.Body)
		}
		var comp struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &comp); err != nil || len(comp.Choices) != 1 {
			t.Fatalf("answer %s: %v", rec.Body, err)
		}
		reqs := fake.Requests()
		return reqs[len(reqs)-1], comp.Choices[0].Message.Content
	}
	_, text := post(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`, "features=a", "features=b")
	answer, _ := json.Marshal(text)
	next := `{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":` + string(answer) + `},{"role":"user","content":"more"}]}`
	if got, _ := post(next, "features=a", "features=c"); len(got.Replayed) != 0 {
		t.Fatalf("reasoning produced under another OpenAI-Beta set was replayed: %+v", got.Replayed)
	}
	if got, _ := post(next, "features=a", "features=b"); len(got.Replayed) != 1 {
		t.Fatalf("with the same OpenAI-Beta set: %d replayed, want 1", len(got.Replayed))
	}
}
