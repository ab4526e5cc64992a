package caddymodule

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
)

// serveResponses forwards POST …/responses to the upstream as is, under the
// same guards as the chat route: authentication, body cap, idle and
// delivery deadlines, SSE event cap and keepalives. Only the credential is
// swapped.
func (rq *request) serveResponses() {
	h := rq.h
	if h.capture != nil {
		rq.beginCapture()
		defer rq.cap.Finish()
	}
	body, ok := rq.readBody()
	if !ok {
		return
	}
	var probe struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	err := json.Unmarshal(body, &probe)
	rq.captureClientRequest(body, probe.Model, probe.Stream)
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
	// the cache does not observe this generation: fence what it may touch
	if !rq.fenceCache(ctx, probe.Model) {
		return
	}
	idle := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() { cancel(errUpstreamIdle) })
	defer idle.Stop()

	upHdr := rq.upstreamHeaders()
	rq.captureUpstreamRequest(body, probe.Stream, upHdr)
	resp, err := h.upstream.Post(ctx, "responses", body, probe.Stream, upHdr)
	if err != nil {
		rq.captureUpstreamFailure()
		rq.upstreamFailure(ctx, err)
		return
	}
	defer resp.Body.Close()
	rq.capUp = rq.captureUpstreamResponse(resp)
	idle.Kick()
	if !rq.upstreamOK(ctx, resp, idle) {
		return
	}
	if isEventStream(resp.Header) {
		_ = rq.relayStream(ctx, cancel, resp, idle, &passFrames{})
		return
	}
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return
	}
	rq.writeJSON(resp.Header, raw)
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
