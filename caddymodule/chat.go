package caddymodule

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
)

// serveChat relays POST …/chat/completions: translate the body (either
// shape) to a Responses request, forward it and convert the answer back.
func (rq *request) serveChat() {
	h := rq.h
	if h.capture != nil {
		rq.beginCapture()
		defer rq.cap.Finish()
	}
	body, ok := rq.readBody()
	if !ok {
		return
	}
	treq, aerr := translate.Translate(body, &h.translator)
	rq.captureChatRequest(body, treq)
	if aerr != nil {
		rq.fail(aerr, "invalid_request")
		return
	}
	upBody, err := treq.Body()
	if err != nil {
		rq.fail(apierr.New(http.StatusInternalServerError, apierr.TypeServer, "translation_failed",
			"The relay could not encode the upstream request."), "translation_failed")
		return
	}

	ctx, cancel := context.WithCancelCause(rq.r.Context())
	defer cancel(errFinished)
	idle := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() { cancel(errUpstreamIdle) })
	defer idle.Stop()

	upHdr := rq.upstreamHeaders()
	rq.captureUpstreamRequest(upBody, treq.Stream, upHdr)
	resp, err := h.upstream.Post(ctx, "responses", upBody, treq.Stream, upHdr)
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

	opts := translate.ChatOptions{
		ID:           "chatcmpl-" + strings.TrimPrefix(rq.id, "rr_"),
		Created:      rq.start.Unix(),
		Model:        treq.Model,
		IncludeUsage: treq.IncludeUsage,
	}
	if treq.Stream {
		if !isEventStream(resp.Header) {
			rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_not_streaming",
				"The upstream answered a streaming request without an event stream."), "upstream_not_streaming")
			return
		}
		rq.relayStream(ctx, cancel, resp, idle, chatFrames{translate.NewStream(opts)})
		return
	}
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return
	}
	out, aerr := translate.ChatCompletion(raw, opts)
	if aerr != nil {
		rq.fail(aerr, "upstream_failed_response")
		return
	}
	rq.writeJSON(resp.Header, out)
}

// upstreamOK checks the upstream status. For a non-2xx answer it reads the
// (capped) error body and answers the client with the upstream status and
// an OpenAI-shaped error.
func (rq *request) upstreamOK(ctx context.Context, resp *http.Response, idle *transport.Watchdog) bool {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return true
	}
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return false
	}
	copyUpstreamHeaders(rq.w.Header(), resp.Header)
	rq.fail(transport.UpstreamError(resp.StatusCode, raw, rq.h.upstreamSecret()), "upstream_status_"+strconv.Itoa(resp.StatusCode))
	return false
}

// readUpstreamBody reads a buffered upstream body under the response cap
// and the idle deadline. On failure it has already answered the client.
func (rq *request) readUpstreamBody(ctx context.Context, resp *http.Response, idle *transport.Watchdog) ([]byte, bool) {
	raw, err := transport.ReadAll(transport.ProgressReader{R: resp.Body, WD: idle}, rq.h.MaxResponseBytes, resp.ContentLength)
	switch {
	case err == nil:
		rq.capUp.Write(raw)
		return raw, true
	case err == transport.ErrTooLarge:
		rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_response_too_large",
			"The upstream answer exceeds the relay's max_response_bytes limit of "+formatBytes(rq.h.MaxResponseBytes)+"."), "response_too_large")
	default:
		rq.upstreamFailure(ctx, err)
	}
	return nil, false
}

// writeJSON sends a complete JSON answer under the delivery deadline.
func (rq *request) writeJSON(upstreamHeader http.Header, body []byte) {
	hdr := rq.w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	copyUpstreamHeaders(hdr, upstreamHeader)
	rq.w.WriteHeader(http.StatusOK)
	ds := transport.NewDownstream(rq.w, time.Duration(rq.h.WriteTimeout))
	defer ds.Close()
	ds.SetDeliveryDeadline(time.Now().Add(time.Duration(rq.h.DeliveryTimeout)))
	if err := ds.WriteFlush(body); err != nil {
		rq.log("client_write_failed", http.StatusOK, zap.Error(err))
		return
	}
	rq.log("ok", http.StatusOK, zap.Int("bytes_written", len(body)))
}

// isEventStream reports whether a response is text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// chatFrames adapts translate.Stream to frameConverter.
type chatFrames struct{ s *translate.Stream }

func (c chatFrames) Event(dst []byte, name string, data []byte) ([]byte, bool, error) {
	out, res, err := c.s.Event(dst, name, data)
	return out, res.Terminal, err
}
func (c chatFrames) Finish(dst []byte) []byte                { return c.s.Finish(dst) }
func (c chatFrames) Fail(dst []byte, e *apierr.Error) []byte { return c.s.Fail(dst, e) }
