package caddymodule

import (
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// startRelay provisions a Handler for upstreamURL with the relay token
// "tok" in a Caddy context holding the reasoning_cache app configured by
// cacheJSON, and starts the app (caddy.ProvisionContext provisions but
// does not start apps, and the ledger opens in Start). Both are cleaned
// up when the test ends.
func startRelay(t *testing.T, upstreamURL string, cacheJSON []byte) *Handler {
	t.Helper()
	ctx, err := caddy.ProvisionContext(&caddy.Config{
		Admin:   &caddy.AdminConfig{Disabled: true},
		AppsRaw: caddy.ModuleMap{"reasoning_cache": cacheJSON},
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Upstream: upstreamURL + "/v1", APIKey: "sk-test", RelayTokens: []string{"tok"}}
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
	return h
}
