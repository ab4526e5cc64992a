package caddymodule

import (
	"context"
	"net/http"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// fenceCache is called before a model request goes upstream without the
// cache observing it (a direct Responses request, or a chat request the
// cache could not identify or prepare). It fences the existing cache
// scopes of the request's model (and caller, when the relay partitions by
// caller), so output generated on this unobserved path can never make an
// older record look unique. ok is false when the fence could not be
// written: the client has then been answered 503 and the request must
// not be forwarded.
func (rq *request) fenceCache(ctx context.Context, model string) (ok bool) {
	if rq.engine == nil {
		return true
	}
	h := rq.h
	caller := ""
	if h.CallerHeader != "" {
		caller = rq.r.Header.Get(h.CallerHeader)
	}
	log := h.logger.With(zap.String("request_id", rq.id))
	if err := rq.engine.Fence(ctx, model, caller, h.CallerHeader != "", log); err != nil {
		log.Warn("reasoning cache: cannot fence unobserved traffic", zap.Error(err))
		rq.fail(apierr.New(http.StatusServiceUnavailable, apierr.TypeServer, "cache_unavailable",
			"The relay's reasoning cache cannot record this request safely right now; retry shortly."), "cache_unavailable")
		return false
	}
	return true
}
