package caddymodule

import (
	"context"
	"encoding/json"
	"net"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// serveResponses forwards POST …/responses to the upstream as is, under the
// same guards as the chat route: authentication, body cap, idle and
// delivery deadlines, SSE event cap and keepalives. Only the credential is
// swapped. The reasoning cache does not observe these requests: it fences
// the scopes they could touch.
func (rq *request) serveResponses() {
	h := rq.h
	body, ok := rq.admit()
	if !ok {
		return
	}
	var probe struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	err := json.Unmarshal(body, &probe)
	rq.logClientRequest(body, probe.Model, probe.Stream)
	if aerr := translate.CheckJSON(body); aerr != nil {
		rq.fail(aerr, "invalid_request")
		return
	}
	if err != nil {
		rq.fail(apierr.InvalidRequest("", "invalid_json",
			"We could not parse the JSON body of your request. The body must be a JSON object."), "invalid_request")
		return
	}

	ctx, cancel := context.WithCancelCause(rq.r.Context())
	defer cancel(errFinished)
	if !rq.fenceCache(ctx, probe.Model) {
		return
	}
	rq.endPreparation()
	idle := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() { cancel(errUpstreamIdle) })
	defer idle.Stop()
	resp, ok := rq.postUpstream(ctx, net.Buffers{body}, int64(len(body)), probe.Stream, idle, nil)
	if !ok {
		return
	}
	rq.releaseBody() // the upstream has answered: the body is not needed any more
	defer resp.Body.Close()
	if !isSuccess(resp) {
		if e, ok := rq.upstreamError(ctx, resp, idle); ok {
			rq.failUpstream(e, resp, resp.StatusCode)
		}
		return
	}
	if isEventStream(resp.Header) {
		conv := &passFrames{}
		if es, ok := rq.relayEvents(ctx, cancel, resp, idle, conv); ok {
			rq.endStream(es, conv)
		}
		return
	}
	if raw, ok := rq.readUpstreamBody(ctx, resp, idle); ok {
		rq.writeJSON(resp.Header, raw)
	}
}

// passFrames re-frames upstream Responses events unchanged and stops at the
// first terminal event. A stream that ends early gets a Responses-style
// `error` event.
type passFrames struct{ terminal string }

// Succeeded reports whether the terminal event was a successful one.
func (p *passFrames) Succeeded() bool {
	return p.terminal == "response.completed" || p.terminal == "response.incomplete"
}

// Event appends the event as received.
func (p *passFrames) Event(dst []byte, name string, data []byte) ([]byte, bool, error) {
	typ := name
	if typ == "" {
		var probe struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(data, &probe)
		typ = probe.Type
	}
	if name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, name...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, data...)
	dst = append(dst, "\n\n"...)
	switch typ {
	case "response.completed", "response.incomplete", "response.failed", "error":
		p.terminal = typ
		return dst, true, nil
	}
	return dst, false, nil
}

// Finish appends nothing: the terminal event itself ends a Responses stream.
func (*passFrames) Finish(dst []byte) []byte { return dst }

// Fail appends an `error` event in the documented Responses shape.
func (*passFrames) Fail(dst []byte, e *apierr.Error) []byte {
	obj := map[string]any{"type": "error", "code": e.Code, "message": e.Message, "param": nil}
	b, _ := json.Marshal(obj)
	dst = append(dst, "event: error\ndata: "...)
	dst = append(dst, b...)
	return append(dst, "\n\n"...)
}
