package caddymodule

import (
	"errors"
	"fmt"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
)

// provisionCache finds the reasoning_cache app. Caddy instantiates it (and
// starts it) even when the configuration has no reasoning_cache option;
// disabled without a database it opens nothing.
func (h *Handler) provisionCache(ctx caddy.Context) error {
	app, err := ctx.App("reasoning_cache")
	if err != nil {
		return fmt.Errorf("getting the reasoning_cache app: %w", err)
	}
	h.cache = app.(*CacheApp)
	return nil
}

// holdCache pins the reasoning cache's ledger for the duration of one
// request, so that a `caddy reload` (which cleans up the old configuration
// while its streams are still running) cannot close it under the request.
// It returns the cache engine (nil when the cache is disabled) and the
// release function to defer.
func (rq *request) holdCache() (*reasoningcache.Engine, func()) {
	if rq.h.cache == nil {
		return nil, func() {}
	}
	engine, release, err := rq.h.cache.AcquireEngine()
	if err != nil {
		if !errors.Is(err, ErrCacheDisabled) {
			rq.h.logger.Warn("reasoning cache unavailable; relaying without it",
				zap.String("request_id", rq.id), zap.Error(err))
		}
		return nil, release
	}
	return engine, release
}

// replayRetry reports whether the cache resends a request once without
// replay when the upstream rejects its replayed reasoning.
func (h *Handler) replayRetry() bool { return h.cache != nil && h.cache.replayRetry() }
