package caddymodule

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDeliveredSessionEndsAfterResponse: a delivered session is ended in
// the background after ServeHTTP returns, and that end still happens: the
// intent is resolved (not left for the sweep), the session's memory and
// the request's pin of the ledger are given back, and the status waits
// for it.
func TestDeliveredSessionEndsAfterResponse(t *testing.T) {
	h, _ := startRelay(t, true)
	req := chatRequest(strings.NewReader(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`))
	rec := httptest.NewRecorder()
	if err := h.ServeHTTP(rec, req, nil); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK {
		t.Fatalf("chat: %d %s", rec.Code, rec.Body)
	}
	ctx := context.Background()
	st := buildStatus(ctx) // waits for the background end
	if n := settling.Load(); n != 0 {
		t.Fatalf("%d delivered sessions not ended after the status", n)
	}
	if st.Sessions.Active != 0 || h.cache.engine.Stats().Sessions != 0 {
		t.Fatalf("sessions still active: status %d", st.Sessions.Active)
	}
	holder := h.cache.holder
	holder.mu.Lock()
	pins := holder.inflight
	holder.mu.Unlock()
	if pins != 0 {
		t.Fatalf("%d pins of the ledger held after the request ended", pins)
	}
	left, err := holder.store.UnresolvedIntents(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Fatalf("%d intents left unresolved after a delivered answer", len(left))
	}
}
