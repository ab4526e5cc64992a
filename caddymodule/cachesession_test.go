package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2"
)

// TestCacheUnavailableIs503: when the ledger cannot record a request (here
// it is closed under the running configuration), the relay answers 503
// cache_unavailable rather than forward a request whose output it could
// not track; before that, the same request is relayed normally.
func TestCacheUnavailableIs503(t *testing.T) {
	h, fake := startRelay(t, true)
	if h.cache.engine == nil {
		t.Fatal("the cache engine is not running")
	}
	post := func() *httptest.ResponseRecorder {
		req := chatRequest(strings.NewReader(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`))
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	if rec := post(); rec.Code != http.StatusOK {
		t.Fatalf("with a working ledger: %d %s", rec.Code, rec.Body)
	}
	if err := h.cache.holder.store.Close(); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	rec := post()
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), `"code":"cache_unavailable"`) {
		t.Fatalf("with a failed ledger: %d %s", rec.Code, rec.Body)
	}
	if len(fake.Requests()) != before {
		t.Fatal("a request the cache could not record went upstream")
	}
}

// TestCacheBudgetTooSmallFailsAtStartup: an enabled configuration whose
// memory budget cannot hold the shared allowance is refused when Caddy
// loads it, and a negative setting is refused the same way.
func TestCacheBudgetTooSmallFailsAtStartup(t *testing.T) {
	for _, extra := range []map[string]any{{"memory_budget": 1 << 20}, {"max_concurrent": -1}} {
		cfg := map[string]any{"database": filepath.Join(t.TempDir(), "ledger.sqlite"), "enabled": true}
		for k, v := range extra {
			cfg[k] = v
		}
		raw, _ := json.Marshal(cfg)
		_, err := caddy.ProvisionContext(&caddy.Config{
			Admin:   &caddy.AdminConfig{Disabled: true},
			AppsRaw: caddy.ModuleMap{"reasoning_cache": raw},
		})
		if err == nil {
			t.Fatalf("%v: provisioned", extra)
		}
		for k := range extra {
			if !strings.Contains(err.Error(), k) {
				t.Fatalf("%v: error does not name the option: %v", extra, err)
			}
		}
	}
}
