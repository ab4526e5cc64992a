package caddymodule

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// cacheSession is one request's use of the reasoning cache. Its methods
// are safe on a nil receiver (cache disabled or skipped), so the relay's
// code paths read the same with and without the cache.
type cacheSession struct {
	rq    *request
	s     *reasoningcache.Session
	ended bool
}

// scopeMembers are the upstream body members that have their own place
// in the cache scope, or are the history, or are transport details.
var scopeMembers = map[string]bool{
	"input": true, "model": true, "tools": true, "reasoning": true, "max_output_tokens": true,
	"store": true, "include": true, "stream": true, "stream_options": true,
}

// prepareCache identifies the request, plans replay and commits the
// dispatch intent. It edits treq's input (replayed blocks) and adds a
// prompt_cache_key when the client sent none. ok is false when the client
// has been answered (503: the cache could not record what it must).
func (rq *request) prepareCache(ctx context.Context, treq *translate.Request) (cs *cacheSession, ok bool) {
	if rq.engine == nil {
		return nil, true
	}
	req, err := rq.cacheRequest(treq)
	if err != nil {
		rq.h.logger.Warn("reasoning cache: request not identifiable; relaying without the cache",
			zap.String("request_id", rq.id), zap.Error(err))
		return nil, rq.fenceCache(ctx, treq.Model)
	}
	sess, err := rq.engine.Prepare(ctx, req)
	switch {
	case errors.Is(err, reasoningcache.ErrUnavailable):
		rq.fail(apierr.New(http.StatusServiceUnavailable, apierr.TypeServer, "cache_unavailable",
			"The relay's reasoning cache cannot record this request safely right now; retry shortly."), "cache_unavailable")
		return nil, false
	case err != nil:
		rq.h.logger.Warn("reasoning cache: prepare failed; relaying without the cache",
			zap.String("request_id", rq.id), zap.Error(err))
		return nil, rq.fenceCache(ctx, treq.Model)
	}
	if in := sess.Input(); in != nil {
		treq.Input = in
	}
	if key := sess.PromptCacheKey(); key != "" {
		treq.SetField("prompt_cache_key", json.RawMessage(strconv.Quote(key)))
	}
	return &cacheSession{rq: rq, s: sess}, true
}

// cacheRequest builds the engine's view of a translated request.
func (rq *request) cacheRequest(treq *translate.Request) (reasoningcache.Request, error) {
	h := rq.h
	scope := canonical.Scope{
		Shape:      canonical.ShapeChat,
		Origin:     h.upstream.Origin(),
		Endpoint:   h.upstream.EndpointPath("responses"),
		Credential: h.apiKey,
		RelayToken: rq.token,
		Model:      treq.Model,
		OpenAIBeta: effectiveOpenAIBeta(rq.r.Header),
	}
	if treq.Shape == translate.ShapeResponses {
		scope.Shape = canonical.ShapeResponses
	}
	if h.CallerHeader != "" {
		scope.Caller = rq.r.Header.Get(h.CallerHeader)
	}
	config := map[string]json.RawMessage{}
	for _, f := range treq.Fields {
		switch f.Key {
		case "reasoning":
			scope.Reasoning = f.Value
		case "tools":
			scope.Tools = f.Value
		case "max_output_tokens":
			if err := json.Unmarshal(f.Value, &scope.MaxOutputTokens); err != nil {
				return reasoningcache.Request{}, errors.New("max_output_tokens is not an integer")
			}
		case "store":
			if err := json.Unmarshal(f.Value, &scope.Store); err != nil {
				return reasoningcache.Request{}, errors.New("store is not a boolean")
			}
		case "include":
			if err := json.Unmarshal(f.Value, &scope.Include); err != nil {
				return reasoningcache.Request{}, errors.New("include is not a list of strings")
			}
		default:
			if !scopeMembers[f.Key] {
				config[f.Key] = f.Value
			}
		}
	}
	cfg, err := json.Marshal(config)
	if err != nil {
		return reasoningcache.Request{}, err
	}
	scope.Config = cfg
	_, hasKey := treq.Field("prompt_cache_key")
	req := reasoningcache.Request{
		Scope:          scope,
		History:        make([]json.RawMessage, len(treq.History)),
		Spans:          make([][2]int, len(treq.History)),
		Input:          treq.Input,
		PromptCacheKey: !hasKey,
		Logger:         rq.h.logger.With(zap.String("request_id", rq.id)),
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

// captureLimit is the entry allowance a stream's capture keeps at most
// (0: nothing is captured for the cache anyway).
func (cs *cacheSession) captureLimit() int64 {
	if !cs.handled() {
		return 0
	}
	return cs.rq.engine.Config().EntryAllowance
}

// captureGrow charges a stream's capture to the cache's memory budget as
// it grows (nil when nothing is captured for the cache).
func (cs *cacheSession) captureGrow() func(int64) bool {
	if !cs.handled() {
		return nil
	}
	return cs.s.GrowCapture
}

// progress renews the generation inactivity deadline of the session's
// intent after upstream progress.
func (cs *cacheSession) progress() {
	if cs != nil {
		cs.s.Progress()
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

// complete records the finished upstream response before its terminal
// chunk or JSON body is written. Failures are logged and the response is
// still delivered: a session whose outcome was not recorded never ends
// with a clean resolve (end poisons its position, or leaves the intent
// for the sweep).
func (cs *cacheSession) complete(ctx context.Context, out reasoningcache.Outcome) {
	if cs == nil || cs.ended {
		return
	}
	// the commit must not be cut short by a client that goes away at the
	// last moment; it is bounded by the delivery deadline instead
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Duration(cs.rq.h.DeliveryTimeout))
	defer cancel()
	if err := cs.s.Complete(ctx, out); err != nil {
		cs.rq.h.logger.Warn("reasoning cache: recording the response failed",
			zap.String("request_id", cs.rq.id), zap.Error(err))
	}
}

// end finishes the session: delivered resolves the intent; otherwise an
// interrupted response poisons its position, and a failure before any
// byte reached the client just releases it.
func (cs *cacheSession) end(delivered, bytesSent bool, why string) {
	if cs == nil || cs.ended {
		return
	}
	cs.ended = true
	ctx := context.WithoutCancel(cs.rq.r.Context())
	switch {
	case delivered:
		cs.s.Delivered(ctx)
	case bytesSent:
		cs.s.Abandon(ctx, why)
	default:
		cs.s.Release(ctx)
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
