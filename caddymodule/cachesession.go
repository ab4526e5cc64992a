package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
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

// holdCache pins the reasoning cache's ledger for the duration of the
// request, so that a `caddy reload` (which cleans up the old configuration
// while its streams are still running) cannot close it under the request.
// It sets rq.engine (nil when the cache is off) and rq.unpin, which
// rq.close calls.
func (rq *request) holdCache() {
	if rq.h.cache == nil {
		return
	}
	engine, release, err := rq.h.cache.acquireEngine()
	rq.unpin = release
	if err != nil {
		if !errors.Is(err, ErrCacheDisabled) {
			rq.h.logger.Warn("reasoning cache unavailable; relaying without it",
				zap.String("request_id", rq.id), zap.Error(err))
		}
		return
	}
	rq.engine = engine
}

// replayRetry reports whether the cache resends a request once without
// replay when the upstream rejects its replayed reasoning.
func (h *Handler) replayRetry() bool { return h.cache != nil && h.cache.replayRetry() }

// cacheSession is one chat request's use of the reasoning cache: a
// reasoningcache.Session and what the relay needs around it. Its methods
// are safe on a nil receiver (cache disabled or skipped), so the chat path
// reads the same with and without the cache. serveChat ends it exactly
// once, with delivered, abandon or release.
type cacheSession struct {
	s   *reasoningcache.Session
	log *zap.Logger // the handler's, with the request ID
	// allowance is the engine's per-request recording allowance (the entry allowance)
	allowance int64
	// commitTimeout bounds complete (the handler's delivery_timeout)
	commitTimeout time.Duration
}

// prepareCache identifies the request, plans replay and commits the
// dispatch intent. It edits treq's input (replayed blocks) and adds a
// prompt_cache_key when the client sent none. ok is false when the client
// has been answered (503: the cache could not record what it must).
func (rq *request) prepareCache(ctx context.Context, treq *translate.Request) (cs *cacheSession, ok bool) {
	if rq.engine == nil {
		return nil, true
	}
	log := rq.h.logger.With(zap.String("request_id", rq.id))
	req, err := rq.cacheRequest(treq, log)
	if err != nil {
		log.Warn("reasoning cache: request not identifiable; relaying without the cache", zap.Error(err))
		return nil, rq.fenceCache(ctx, treq.Model)
	}
	sess, err := rq.engine.Prepare(ctx, req)
	switch {
	case errors.Is(err, reasoningcache.ErrUnavailable):
		rq.fail(apierr.New(http.StatusServiceUnavailable, apierr.TypeServer, "cache_unavailable",
			"The relay's reasoning cache cannot record this request safely right now; retry shortly."), "cache_unavailable")
		return nil, false
	case err != nil:
		log.Warn("reasoning cache: prepare failed; relaying without the cache", zap.Error(err))
		return nil, rq.fenceCache(ctx, treq.Model)
	}
	if in := sess.Input(); in != nil {
		treq.Input = in
	}
	if key := sess.PromptCacheKey(); key != "" {
		treq.SetField("prompt_cache_key", json.RawMessage(strconv.Quote(key)))
	}
	return &cacheSession{s: sess, log: log, allowance: rq.engine.Config().EntryAllowance,
		commitTimeout: time.Duration(rq.h.DeliveryTimeout)}, true
}

// cacheRequest builds the engine's view of a translated request: the
// scope is who asks (relay token, caller, credential), where the request
// goes (origin, endpoint, OpenAI-Beta) and what the upstream is asked
// (model and the body's settings, as translate sorts them); the history is
// the client's visible messages with the input items each became.
func (rq *request) cacheRequest(treq *translate.Request, log *zap.Logger) (reasoningcache.Request, error) {
	h := rq.h
	set, err := treq.Settings()
	if err != nil {
		return reasoningcache.Request{}, err
	}
	scope := canonical.Scope{
		Shape:           canonical.ShapeChat,
		Origin:          h.upstream.Origin(),
		Endpoint:        h.upstream.EndpointPath("responses"),
		Credential:      h.apiKey,
		RelayToken:      rq.token,
		Model:           treq.Model,
		OpenAIBeta:      effectiveOpenAIBeta(rq.r.Header),
		Reasoning:       set.Reasoning,
		Tools:           set.Tools,
		MaxOutputTokens: set.MaxOutputTokens,
		Store:           set.Store,
		Include:         set.Include,
		Config:          set.Config,
	}
	if treq.Shape == translate.ShapeResponses {
		scope.Shape = canonical.ShapeResponses
	}
	if h.CallerHeader != "" {
		scope.Caller = rq.r.Header.Get(h.CallerHeader)
	}
	_, hasKey := treq.Field("prompt_cache_key")
	req := reasoningcache.Request{
		Scope:          scope,
		History:        make([]json.RawMessage, len(treq.History)),
		Spans:          make([][2]int, len(treq.History)),
		Input:          treq.Input,
		PromptCacheKey: !hasKey,
		Logger:         log,
	}
	for i, m := range treq.History {
		req.History[i] = m.Raw
		req.Spans[i] = m.Items
	}
	return req, nil
}

// replayed reports how many earlier turns the request carries.
func (cs *cacheSession) replayed() int {
	if cs == nil {
		return 0
	}
	return cs.s.Replayed()
}

// handled reports whether the cache handles the request: it holds an
// intent, so the output will be observed.
func (cs *cacheSession) handled() bool { return cs != nil && cs.s.Dispatched() }

// recordLimit is the entry allowance a stream's recording keeps at most
// (0: nothing is recorded for the cache anyway).
func (cs *cacheSession) recordLimit() int64 {
	if !cs.handled() {
		return 0
	}
	return cs.allowance
}

// recordGrow charges a stream's recording to the cache's memory budget as
// it grows (nil when nothing is recorded for the cache).
func (cs *cacheSession) recordGrow() func(int64) bool {
	if !cs.handled() {
		return nil
	}
	return cs.s.GrowRecord
}

// progress renews the generation inactivity deadline of the session's
// intent after upstream progress.
func (cs *cacheSession) progress() {
	if cs != nil {
		cs.s.Progress()
	}
}

// answered lets the session drop the input it kept for a resend: the
// upstream accepted the request.
func (cs *cacheSession) answered() {
	if cs != nil {
		cs.s.Answered()
	}
}

// dropReplay re-plans the request without replay after the upstream
// rejected replayed reasoning, recording a conflict for those turns.
func (cs *cacheSession) dropReplay(ctx context.Context, treq *translate.Request) error {
	in, err := cs.s.DropReplay(ctx)
	if err != nil {
		return err
	}
	treq.Input = in
	return nil
}

// rejected counts an upstream rejection of the replayed reasoning.
func (cs *cacheSession) rejected() { cs.s.Rejected() }

// complete records the finished upstream response (Session.Complete)
// before its terminal chunk or JSON body is written. Failures are logged
// and the response is still delivered: a session whose outcome was not
// recorded never ends with a clean resolve (its end poisons its position,
// or leaves the intent for the sweep).
func (cs *cacheSession) complete(ctx context.Context, out reasoningcache.Outcome) {
	if cs == nil {
		return
	}
	// the commit must not be cut short by a client that goes away at the
	// last moment; it is bounded by the delivery deadline instead
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cs.commitTimeout)
	defer cancel()
	if err := cs.s.Complete(ctx, out); err != nil {
		cs.log.Warn("reasoning cache: recording the response failed", zap.Error(err))
	}
}

// The three ends of a session; serveChat calls exactly one. They run even
// when the client has gone away (the context's cancellation is dropped).
// The first, for a delivered answer, is request.deliveredAfterResponse.

// abandon ends a session whose answer was interrupted after bytes reached
// the client: its position is poisoned, for reason why.
func (cs *cacheSession) abandon(ctx context.Context, why string) {
	if cs != nil {
		cs.s.Abandon(context.WithoutCancel(ctx), why)
	}
}

// release ends a session that failed before any byte reached the client.
func (cs *cacheSession) release(ctx context.Context) {
	if cs != nil {
		cs.s.Release(context.WithoutCancel(ctx))
	}
}

// outcomeOf converts what translate observed into the engine's outcome.
func outcomeOf(status, snapshot string, output, done []json.RawMessage, sent translate.Sent) reasoningcache.Outcome {
	out := reasoningcache.Outcome{
		Status: status, Model: snapshot, Output: output, DoneItems: done,
		Sent: reasoningcache.Sent{Content: sent.Content, Refusal: sent.Refusal},
	}
	for _, tc := range sent.ToolCalls {
		out.Sent.ToolCalls = append(out.Sent.ToolCalls, reasoningcache.ToolCall{
			ID: tc.ID, Name: tc.Name, Arguments: tc.Arguments, Custom: tc.Custom,
		})
	}
	return out
}

// isReplayRejection reports whether an upstream error says that replayed
// reasoning was not accepted: 400 invalid_encrypted_content, or 404 for an
// item the upstream does not have.
func isReplayRejection(e *apierr.Error) bool {
	switch e.Status {
	case http.StatusBadRequest:
		return e.Code == "invalid_encrypted_content"
	case http.StatusNotFound:
		return e.Param == "input" || e.Code == "item_not_found"
	}
	return false
}
