package caddymodule

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// TestDirectResponsesTrafficFences: a direct POST …/responses is not
// observed by the cache, so it fences the scopes of its model first: a
// conversation recorded before it no longer replays. When the fence
// cannot be written the direct request gets 503 and is not forwarded.
func TestDirectResponsesTrafficFences(t *testing.T) {
	h, fake := startRelay(t, true)
	post := func(path, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	chat := func(body string) fakeupstream.Request {
		t.Helper()
		if rec := post("/v1/chat/completions", body); rec.Code != http.StatusOK {
			t.Fatalf("chat: %d %s", rec.Code, rec.Body)
		}
		reqs := fake.Requests()
		return reqs[len(reqs)-1]
	}
	chat(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`)
	next := `{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"echo: hi"},{"role":"user","content":"more"}]}`
	if got := chat(next); len(got.Replayed) != 1 {
		t.Fatalf("before direct traffic: %d replayed, want 1", len(got.Replayed))
	}
	if rec := post("/v1/responses", `{"model":"gpt-5.2","input":"direct"}`); rec.Code != http.StatusOK {
		t.Fatalf("direct: %d %s", rec.Code, rec.Body)
	}
	if got := chat(next); len(got.Replayed) != 0 {
		t.Fatalf("after direct traffic: %d replayed, want 0 (the scope is fenced)", len(got.Replayed))
	}

	if err := h.cache.holder.store.Close(); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	rec := post("/v1/responses", `{"model":"gpt-5.2","input":"direct"}`)
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"code":"cache_unavailable"`) {
		t.Fatalf("direct with a failed ledger: %d %s", rec.Code, rec.Body)
	}
	if len(fake.Requests()) != before {
		t.Fatal("an unfenced direct request went upstream")
	}
}
