package caddymodule

import (
	"errors"
	"net/http"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// Reasons the relay cannot serve with its cache as configured. They are
// logged at DEBUG by the health route and never sent to clients.
var (
	errDraining      = errors.New("reasoning cache: draining: Caddy is stopping or unloading this configuration")
	errLedgerNotOpen = errors.New("reasoning cache: enabled but its ledger is not open")
	errLedgerClosed  = errors.New("reasoning cache: ledger is closed")
	errGuardLatched  = errors.New("reasoning cache: the disk guard is latched; requests are relayed without the cache")
)

// healthBody is the whole answer of a healthy relay.
var healthBody = []byte(`{"status":"ok"}`)

// Healthy reports whether this configuration can serve requests with its
// reasoning cache as configured. It returns an error while Caddy is
// exiting or this configuration is being stopped (draining), when the
// cache is enabled but its ledger is not open, and when the ledger has
// closed or latched its disk guard (a full disk). A cache disabled by
// configuration is healthy: the relay serves as configured.
func (a *CacheApp) Healthy() error {
	if caddy.Exiting() || a.stopping == nil || a.stopping.Load() {
		return errDraining
	}
	if !a.Enabled {
		return nil
	}
	select {
	case <-a.ready: // Start has finished: holder and engine are set
	default:
		return errLedgerNotOpen
	}
	h := a.holder
	if h == nil || a.engine == nil {
		return errLedgerNotOpen
	}
	return h.healthy()
}

// healthy reports whether the store is still open for requests and has
// not latched its disk guard.
func (h *storeHolder) healthy() error {
	select {
	case <-h.closed:
		return errLedgerClosed
	default:
	}
	if h.store.Guarded() {
		return errGuardLatched
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dropped && h.inflight == 0 {
		return errLedgerClosed
	}
	return nil
}

// serveHealth answers GET …/health, unauthenticated, for load balancers
// (Caddy's `health_uri`): 200 {"status":"ok"} when the relay can serve
// with its cache as configured, 503 in OpenAI's error shape when it
// cannot, including from the moment Caddy starts shutting the server down
// (`shutdown_delay`, `{http.shutting_down}`). The answer says nothing
// else: no reason, version or counts.
func (rq *request) serveHealth() {
	rq.w.Header().Set("Cache-Control", "no-store")
	err := rq.h.healthy(rq.r)
	if err != nil {
		rq.fail(apierr.New(http.StatusServiceUnavailable, apierr.TypeServer, "relay_unavailable",
			"The relay cannot serve requests right now; try another one."), "unhealthy")
		rq.h.logger.Debug("health check failed", zap.String("request_id", rq.id), zap.Error(err))
		return
	}
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(http.StatusOK)
	if rq.r.Method != http.MethodHead {
		_, _ = rq.w.Write(healthBody)
	}
	rq.log("ok", http.StatusOK)
}

// healthy combines the HTTP server's shutdown state with the cache app's
// health.
func (h *Handler) healthy(r *http.Request) error {
	if repl, ok := r.Context().Value(caddy.ReplacerCtxKey).(*caddy.Replacer); ok {
		if v, _ := repl.Get("http.shutting_down"); v == true {
			return errDraining
		}
	}
	if h.cache == nil {
		return nil
	}
	return h.cache.Healthy()
}
