package caddymodule

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// startRelay starts a strict fake upstream (key "sk-test") and provisions
// a Handler for it with the relay token "tok", in a Caddy context holding
// a reasoning_cache app on a new ledger, enabled or not, and starts the
// app (caddy.ProvisionContext provisions but does not start apps, and the
// ledger opens in Start). Everything is cleaned up when the test ends.
func startRelay(t testing.TB, enabled bool) (*Handler, *fakeupstream.Server) {
	t.Helper()
	fake := fakeupstream.New(fakeupstream.Options{APIKey: "sk-test"})
	return startRelayTo(t, enabled, fake), fake
}

// startRelayTo is startRelay with the upstream served by up.
func startRelayTo(t testing.TB, enabled bool, upstream http.Handler) *Handler {
	t.Helper()
	up := httptest.NewServer(upstream)
	t.Cleanup(up.Close)
	cacheJSON, err := json.Marshal(map[string]any{"database": filepath.Join(t.TempDir(), "ledger.sqlite"), "enabled": enabled})
	if err != nil {
		t.Fatal(err)
	}
	ctx, err := caddy.ProvisionContext(&caddy.Config{
		Admin:   &caddy.AdminConfig{Disabled: true},
		AppsRaw: caddy.ModuleMap{"reasoning_cache": cacheJSON},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Upstream: up.URL + "/v1", APIKey: "sk-test", RelayTokens: []string{"tok"}}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Cleanup() })
	if h.cache == nil {
		t.Fatal("no reasoning_cache app")
	}
	if err := h.cache.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.cache.Stop(); _ = h.cache.Cleanup() })
	// (runs first) the resolves of delivered sessions hold the ledger
	// open after their response; let them end before the ledger is
	// released, so that it closes now rather than in a goroutine that
	// outlives the test
	t.Cleanup(func() { awaitSettled(context.Background()) })
	return h
}

// chatRequest is an authenticated POST /v1/chat/completions with body.
func chatRequest(body io.Reader) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", body)
	req.Header.Set("Authorization", "Bearer tok")
	return req
}
