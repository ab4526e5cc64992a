package reasoningcache

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// ErrUnavailable means the cache could not record what it needs to keep a
// forwarded request safe (a required marker or intent could not be
// persisted): the relay must answer 503 instead of forwarding.
var ErrUnavailable = errors.New("reasoningcache: cache unavailable")

// Request is one translated request as the handler knows it.
type Request struct {
	// Scope is the request's scope with the raw credential, relay token
	// and caller values; the engine keys them with the ledger's secret.
	Scope canonical.Scope
	// History is the client's visible envelopes: Chat messages, or the
	// Responses input items (a string input is one JSON string).
	History []json.RawMessage
	// Spans[i] is the [from, to) range of Input that History[i] was
	// translated to. Ranges are in order and do not overlap; an envelope
	// may translate to nothing (from == to).
	Spans [][2]int
	// Input is the translated Responses input.
	Input []json.RawMessage
	// PromptCacheKey asks the engine to derive a prompt_cache_key (the
	// client sent none).
	PromptCacheKey bool
	// Logger, when set, receives the session's Debug lines instead of the
	// engine's logger (the handler's request-scoped logger, with the
	// request id).
	Logger *zap.Logger
}

// Prepare identifies the request, plans which earlier assistant turns to
// replay and commits the dispatch intent, all before it returns; the
// upstream request may be sent only then, with Session.Input.
//
// A request the cache cannot handle still gets a Session, a pass-through
// one (Skip says why): deterministic refusals (limits, unidentifiable
// input) skip with no intent and no marker; a request that cannot get a
// session (capacity) or whose intent cannot be written gets a start-poison
// marker for its position. Only when that marker cannot be persisted does
// Prepare fail, with ErrUnavailable. Other errors are caller mistakes (an
// invalid Scope).
func (e *Engine) Prepare(ctx context.Context, req Request) (s *Session, err error) {
	defer func() { e.counters.prepared(s, err) }()
	log := e.log
	if req.Logger != nil {
		log = req.Logger
	}
	pass := func(reason string) *Session {
		s := newSession(e, nil, log)
		s.input, s.plain, s.skip = req.Input, req.Input, reason
		log.Debug("reasoning cache", zap.String("reason", reason))
		return s
	}
	if !e.store.Enabled() {
		return pass("disabled"), nil
	}
	if !validSpans(req.Spans, len(req.History), len(req.Input)) {
		return pass("invalid_spans"), nil
	}
	if err := e.enterWorkspace(ctx); err != nil {
		return nil, fmt.Errorf("reasoningcache: identify: %w", err)
	}
	d, err := canonical.HistoryDigests(e.secret, req.Scope, req.History, e.cfg.Limits)
	e.leaveWorkspace()
	if err != nil {
		return nil, fmt.Errorf("reasoningcache: identify: %w", err)
	}
	if !d.Eligible() {
		return pass("refused_" + string(d.Refusal.Reason)), nil
	}
	var key string
	if req.PromptCacheKey {
		key = e.promptCacheKey(req.Scope.Shape, req.History, d)
	}
	sc := ledger.Scope{ID: d.Scope.String(), Model: req.Scope.Model, Caller: e.callerFP(req.Scope.Caller)}
	if len(sc.Model) > 256 {
		s := pass("model_too_long")
		s.key = key
		return s, nil
	}
	start := d.Final().String()
	l := e.acquire(requestCharge(&req))
	if l == nil {
		if err := e.poisonStart(ctx, sc, start, "capacity"); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		s := pass("capacity")
		s.key = key
		return s, nil
	}
	s = newSession(e, l, log)
	s.scope, s.shape, s.d, s.key = sc, req.Scope.Shape, d, key
	s.plain, s.input = req.Input, req.Input
	s.start, s.position = start, int64(len(req.History))

	if err := e.dispatch(ctx, s, &req); err != nil {
		l.release()
		s.ended = true
		return nil, err
	}
	return s, nil
}

// dispatch plans, reserves the replayed bytes and creates the intent,
// replanning once after a validation failure and then dispatching without
// replay.
func (e *Engine) dispatch(ctx context.Context, s *Session, req *Request) error {
	var reserved int64 // replay bytes already added to the lease
	for attempt := 0; ; attempt++ {
		var p plan
		if attempt < 2 {
			var reason string
			if err := e.enterWorkspace(ctx); err != nil {
				return fmt.Errorf("reasoningcache: plan: %w", err)
			}
			p, reason = e.plan(ctx, s.scope, s.d, req)
			if reason != "" {
				s.log.Debug("reasoning cache", zap.String("reason", reason))
			}
			// the loaded payloads leave the workspace only inside the lease
			if need := p.bytes; len(p.blocks) > 0 && need > reserved {
				if !s.lease.grow(need - reserved) {
					s.log.Debug("reasoning cache", zap.String("reason", "replay_capacity"))
					e.counters.replayCapacity.Add(1)
					p = plan{}
				} else {
					reserved = need
				}
			}
			e.leaveWorkspace()
		}
		creq := s.intentRequest(p.gen, p.blocks)
		id, err := e.store.CreateIntent(ctx, creq)
		if err == nil {
			s.gen, s.plan = p.gen, p.blocks
			s.dispatched(id)
			if len(p.blocks) > 0 {
				s.input = p.apply(req)
				s.replayed = len(p.blocks)
			}
			return nil
		}
		var ve *ledger.ValidationError
		switch {
		case errors.Is(err, ledger.ErrDisabled):
			s.skip = "disabled"
			return nil
		case errors.As(err, &ve) && len(creq.Plan) > 0 && attempt < 2:
			s.log.Debug("reasoning cache", zap.String("reason", "replan_"+string(ve.Reason)))
			continue
		}
		return s.dispatchFailed(ctx, err)
	}
}

// intentRequest is the dispatch intent of the session's request with the
// given plan (none: generation 0, whatever is current).
func (s *Session) intentRequest(gen int64, blocks []ledger.PlanBlock) ledger.CreateIntentRequest {
	r := ledger.CreateIntentRequest{
		Scope: s.scope, StartDigest: s.start, StartPosition: s.position,
		Deadline: s.e.cfg.Now().Add(s.e.cfg.IntentTimeout),
	}
	if len(blocks) > 0 {
		r.Generation, r.Plan = gen, blocks
	}
	return r
}

// dispatched records the session's intent and starts its inactivity
// timer.
func (s *Session) dispatched(id int64) {
	s.intent = id
	s.watch.begin(id)
}

// dispatchFailed handles an intent that could not be created: the request
// would go out unrecorded, so its position is poisoned first, and it is
// relayed without the cache. Only when the marker cannot be written
// either does it fail, with ErrUnavailable.
func (s *Session) dispatchFailed(ctx context.Context, err error) error {
	if perr := s.e.poisonStart(ctx, s.scope, s.start, "dispatch_failed"); perr != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, errors.Join(err, perr))
	}
	s.skip = "dispatch_failed"
	s.log.Debug("reasoning cache", zap.String("reason", "dispatch_failed"), zap.Error(err))
	return nil
}

// enterWorkspace waits for the shared preparation workspace: canonical
// scratch and the payloads a plan loads are reserved once in the budget
// (SharedAllowance), so concurrent preparations take turns. A plan's
// payloads stay with the session afterwards only once its lease has grown
// by them.
func (e *Engine) enterWorkspace(ctx context.Context) error {
	select {
	case e.prep <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (e *Engine) leaveWorkspace() { <-e.prep }

// poisonStart writes a start-poison marker for a request's position.
func (e *Engine) poisonStart(ctx context.Context, sc ledger.Scope, start, reason string) error {
	_, err := e.store.WriteMarkers(ctx, sc, []ledger.Marker{{Kind: ledger.MarkerStartPoison, Digest: start, Reason: reason}})
	if err == nil {
		e.counters.poisoned(reason, 1)
	}
	return err
}

// callerFP is the caller fingerprint stored with a scope: the same keyed
// hash the canonical scope uses, or "" without a caller.
func (e *Engine) callerFP(caller string) string {
	if caller == "" {
		return ""
	}
	m := hmac.New(sha256.New, e.secret)
	m.Write([]byte("caller\x00"))
	m.Write([]byte(caller))
	return hex.EncodeToString(m.Sum(nil))
}

// promptCacheKey derives a per-conversation key from the prefix digest
// after the first user message (which covers the scope, any system and
// developer messages and the opening request), keyed with the secret: the
// same for every turn of one conversation, different across scopes and
// conversations, and revealing nothing about either. 64 hex digits.
func (e *Engine) promptCacheKey(shape canonical.Shape, history []json.RawMessage, d *canonical.Digests) string {
	at := len(history)
	for i, env := range history {
		if d.Kinds[i] == canonical.KindOther && isUserMessage(shape, env) {
			at = i + 1
			break
		}
	}
	m := hmac.New(sha256.New, e.secret)
	m.Write([]byte(canonical.FormatID + "/prompt_cache_key\x00"))
	m.Write(d.Boundaries[at][:])
	return hex.EncodeToString(m.Sum(nil))
}

func isUserMessage(shape canonical.Shape, env json.RawMessage) bool {
	if shape == canonical.ShapeResponses && len(env) > 0 && env[0] == '"' {
		return true
	}
	var m struct {
		Role string `json:"role"`
		Type string `json:"type"`
	}
	if json.Unmarshal(env, &m) != nil {
		return false
	}
	return m.Role == "user" && (m.Type == "" || m.Type == "message")
}

// validSpans checks that spans cover input in order without overlap.
func validSpans(spans [][2]int, envelopes, inputs int) bool {
	if len(spans) != envelopes {
		return false
	}
	prev := 0
	for _, sp := range spans {
		if sp[0] < prev || sp[1] < sp[0] || sp[1] > inputs {
			return false
		}
		prev = sp[1]
	}
	return true
}

// replaceRanges returns input with each [from, to) range replaced by its
// items; ranges are in order and disjoint.
func replaceRanges(input []json.RawMessage, ranges [][2]int, items [][]json.RawMessage) []json.RawMessage {
	n := len(input)
	for i, r := range ranges {
		n += len(items[i]) - (r[1] - r[0])
	}
	out := make([]json.RawMessage, 0, n)
	prev := 0
	for i, r := range ranges {
		out = append(out, input[prev:r[0]]...)
		out = append(out, items[i]...)
		prev = r[1]
	}
	return slices.Clip(append(out, input[prev:]...))
}
