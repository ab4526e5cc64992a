package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"
)

// TestCacheAppHealthy: healthy while the configuration runs with its
// ledger open or with the cache disabled by configuration; unhealthy once
// the configuration is being stopped (reload or exit), when the ledger is
// closed, and when the cache is enabled without an open ledger.
func TestCacheAppHealthy(t *testing.T) {
	dir := t.TempDir()
	defer stopCaddy(t)

	disabled := loadConfig(t, cacheConfig(t, filepath.Join(dir, "none", "c.sqlite"), false, "ERROR"))
	if err := disabled.Healthy(); err != nil {
		t.Fatalf("cache disabled by configuration: %v, want healthy", err)
	}

	app1 := loadConfig(t, cacheConfig(t, filepath.Join(dir, "c.sqlite"), true, "ERROR"))
	if err := app1.Healthy(); err != nil {
		t.Fatalf("running with an open ledger: %v", err)
	}
	if err := disabled.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("a configuration replaced by a reload: %v, want errDraining", err)
	}

	app2 := loadConfig(t, cacheConfig(t, filepath.Join(dir, "c.sqlite"), true, "WARN"))
	if err := app1.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("old configuration after reload: %v, want errDraining", err)
	}
	if err := app2.Healthy(); err != nil {
		t.Fatalf("new configuration sharing the ledger: %v", err)
	}
	if err := app2.holder.close(); err != nil {
		t.Fatal(err)
	}
	if err := app2.Healthy(); !errors.Is(err, errLedgerClosed) {
		t.Fatalf("closed ledger: %v, want errLedgerClosed", err)
	}

	stopCaddy(t)
	if err := app2.Healthy(); !errors.Is(err, errDraining) {
		t.Fatalf("stopped configuration: %v, want errDraining", err)
	}

	notOpen := &CacheApp{Enabled: true, stopping: new(atomic.Bool)}
	if err := notOpen.Healthy(); !errors.Is(err, errLedgerNotOpen) {
		t.Fatalf("enabled without a ledger: %v, want errLedgerNotOpen", err)
	}
}

// TestHealthRouteAnswers: the route answers without a token, 200 with
// exactly {"status":"ok"} while healthy, and 503 in OpenAI's error shape,
// revealing no reason, as soon as Caddy has scheduled the server's
// shutdown ({http.shutting_down}, set during shutdown_delay) or the cache
// app is draining.
func TestHealthRouteAnswers(t *testing.T) {
	app := &CacheApp{stopping: new(atomic.Bool)}
	h := &Handler{logger: zap.NewNop(), cache: app}
	serve := func(method string, shuttingDown bool) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/v1/health", nil)
		repl := caddy.NewReplacer()
		if shuttingDown {
			repl.Set("http.shutting_down", true)
		}
		r = r.WithContext(context.WithValue(r.Context(), caddy.ReplacerCtxKey, repl))
		w := httptest.NewRecorder()
		if err := h.ServeHTTP(w, r, nil); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if w := serve(http.MethodGet, false); w.Code != http.StatusOK || w.Body.String() != `{"status":"ok"}` {
		t.Fatalf("healthy: %d %q", w.Code, w.Body)
	}
	if w := serve(http.MethodHead, false); w.Code != http.StatusOK || w.Body.Len() != 0 {
		t.Fatalf("HEAD: %d %q", w.Code, w.Body)
	}
	if w := serve(http.MethodPost, false); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != http.MethodGet {
		t.Fatalf("POST: %d Allow %q", w.Code, w.Header().Get("Allow"))
	}
	unhealthy := `{"error":{"code":"relay_unavailable","message":"The relay cannot serve requests right now; try another one.","param":null,"type":"server_error"}}`
	if w := serve(http.MethodGet, true); w.Code != http.StatusServiceUnavailable || w.Body.String() != unhealthy {
		t.Fatalf("shutting down: %d %q", w.Code, w.Body)
	}
	app.stopping.Store(true)
	if w := serve(http.MethodGet, false); w.Code != http.StatusServiceUnavailable || w.Body.String() != unhealthy {
		t.Fatalf("draining: %d %q", w.Code, w.Body)
	}
}
