package caddymodule

import (
	"bytes"
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
// shape) to a Responses request, let the reasoning cache put earlier turns'
// original output back, forward it and convert the answer back.
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

	ctx, cancel := context.WithCancelCause(rq.r.Context())
	defer cancel(errFinished)
	cs, ok := rq.prepareCache(ctx, treq)
	if !ok {
		return
	}
	if !cs.handled() {
		treq.KeepCallerStorage() // storage is overridden only for cached requests
	}
	// from here on only the translation is needed: a large client body
	// can be collected while the request is relayed
	treq.ReleaseClientBody()
	// a session that is not delivered by the code below ends here: as an
	// interruption once bytes reached the client, else as a release
	defer func() { cs.end(false, rq.wroteBody, "not_delivered") }()

	idle := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() { cancel(errUpstreamIdle) })
	defer idle.Stop()
	resp, ok := rq.postChat(ctx, treq, cs, idle)
	if !ok {
		return
	}
	defer resp.Body.Close()

	opts := translate.ChatOptions{
		ID:           "chatcmpl-" + strings.TrimPrefix(rq.id, "rr_"),
		Created:      rq.start.Unix(),
		Model:        treq.Model,
		IncludeUsage: treq.IncludeUsage,
		CaptureLimit: cs.captureLimit(),
		CaptureGrow:  cs.captureGrow(),
	}
	if treq.Stream {
		if !isEventStream(resp.Header) {
			rq.fail(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_not_streaming",
				"The upstream answered a streaming request without an event stream."), "upstream_not_streaming")
			return
		}
		conv := &chatFrames{s: translate.NewStream(opts), cs: cs, ctx: ctx}
		delivered := rq.relayStream(ctx, cancel, resp, idle, conv)
		countUsage(conv.s.Usage(), cs.replayed() > 0)
		cs.end(delivered, true, "stream_interrupted")
		return
	}
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return
	}
	comp, aerr := translate.ConvertCompletion(raw, opts)
	if aerr != nil {
		rq.fail(aerr, "upstream_failed_response")
		return
	}
	countUsage(comp.Usage, cs.replayed() > 0)
	// commit what the cache learned before the client sees the answer
	cs.complete(ctx, outcomeOf(comp.Status, comp.Snapshot, comp.Output, nil, comp.Sent))
	delivered := rq.writeJSON(resp.Header, comp.Body)
	cs.end(delivered, true, "delivery_failed")
}

// postChat sends the translated request upstream. When the upstream
// rejects replayed reasoning before anything reached the client, the
// cache records a conflict for exactly those turns and the request is sent
// once more without replay. On failure it has answered the client.
func (rq *request) postChat(ctx context.Context, treq *translate.Request, cs *cacheSession, idle *transport.Watchdog) (*http.Response, bool) {
	h := rq.h
	for attempt := 1; ; attempt++ {
		parts, n, err := treq.BodyParts()
		if err != nil {
			rq.fail(apierr.New(http.StatusInternalServerError, apierr.TypeServer, "translation_failed",
				"The relay could not encode the upstream request."), "translation_failed")
			return nil, false
		}
		upHdr := rq.upstreamHeaders()
		if rq.cap != nil {
			rq.captureUpstreamRequest(bytes.Join(parts, nil), treq.Stream, upHdr)
		}
		idle.Kick()
		resp, err := h.upstream.PostParts(ctx, "responses", parts, n, treq.Stream, upHdr)
		if err != nil {
			rq.captureUpstreamFailure()
			rq.upstreamFailure(ctx, err)
			return nil, false
		}
		rq.capUp = rq.captureUpstreamResponse(resp)
		idle.Kick()
		if resp.StatusCode >= 200 && resp.StatusCode < 300 {
			return resp, true
		}
		e, ok := rq.upstreamError(ctx, resp, idle)
		resp.Body.Close()
		if !ok {
			return nil, false
		}
		rejected := attempt == 1 && cs.replayed() > 0 && isReplayRejection(e)
		if rejected {
			cs.s.Rejected()
		}
		if rejected && h.replayRetry() {
			h.logger.Warn("upstream rejected replayed reasoning; resending without replay",
				zap.String("request_id", rq.id), zap.Int("status", e.Status), zap.String("error_code", e.Code))
			if err := cs.dropReplay(ctx, treq); err == nil {
				continue
			}
		}
		rq.h.copyUpstreamHeaders(rq.w.Header(), resp.Header)
		rq.fail(e, "upstream_status_"+strconv.Itoa(e.Status))
		return nil, false
	}
}

// upstreamOK checks the upstream status. For a non-2xx answer it reads the
// (capped) error body and answers the client with the upstream status and
// an OpenAI-shaped error.
func (rq *request) upstreamOK(ctx context.Context, resp *http.Response, idle *transport.Watchdog) bool {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return true
	}
	if e, ok := rq.upstreamError(ctx, resp, idle); ok {
		rq.h.copyUpstreamHeaders(rq.w.Header(), resp.Header)
		rq.fail(e, "upstream_status_"+strconv.Itoa(resp.StatusCode))
	}
	return false
}

// upstreamError reads a non-2xx upstream answer's (capped) body into the
// error the client would get. ok is false when reading failed and the
// client has been answered. The upstream's rate-limit headers are passed
// on by the caller only when this answer is the one the client gets (not
// for an attempt that is retried).
func (rq *request) upstreamError(ctx context.Context, resp *http.Response, idle *transport.Watchdog) (*apierr.Error, bool) {
	raw, ok := rq.readUpstreamBody(ctx, resp, idle)
	if !ok {
		return nil, false
	}
	return transport.UpstreamError(resp.StatusCode, raw, rq.h.secrets...), true
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

// writeJSON sends a complete JSON answer under the delivery deadline and
// reports whether all of it was written.
func (rq *request) writeJSON(upstreamHeader http.Header, body []byte) bool {
	body = rq.h.scrubOut(body)
	hdr := rq.w.Header()
	hdr.Set("Content-Type", "application/json")
	hdr.Set("Content-Length", strconv.Itoa(len(body)))
	rq.h.copyUpstreamHeaders(hdr, upstreamHeader)
	rq.w.WriteHeader(http.StatusOK)
	rq.wroteBody = true
	ds := transport.NewDownstream(rq.w, time.Duration(rq.h.WriteTimeout))
	defer ds.Close()
	ds.SetDeliveryDeadline(time.Now().Add(time.Duration(rq.h.DeliveryTimeout)))
	if err := ds.WriteFlush(body); err != nil {
		rq.log("client_write_failed", http.StatusOK, zap.Error(err))
		return false
	}
	rq.log("ok", http.StatusOK, zap.Int("bytes_written", len(body)))
	return true
}

// isEventStream reports whether a response is text/event-stream.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// chatFrames adapts translate.Stream to frameConverter. Before the
// terminal frames of a successful response it lets the reasoning cache
// commit what it learned.
type chatFrames struct {
	s   *translate.Stream
	cs  *cacheSession
	ctx context.Context
}

func (c *chatFrames) Event(dst []byte, name string, data []byte) ([]byte, bool, error) {
	c.cs.progress() // upstream progress renews the generation's inactivity deadline
	out, res, err := c.s.Event(dst, name, data)
	return out, res.Terminal, err
}

func (c *chatFrames) Finish(dst []byte) []byte {
	if c.s.Err() == nil {
		out := outcomeOf(c.s.Status(), c.s.Snapshot(), c.s.Output(), c.s.DoneItems(), c.s.Sent())
		out.CaptureExceeded = c.s.CaptureExceeded()
		c.cs.complete(c.ctx, out)
	}
	return c.s.Finish(dst)
}

func (c *chatFrames) Fail(dst []byte, e *apierr.Error) []byte { return c.s.Fail(dst, e) }

func (c *chatFrames) Succeeded() bool { return c.s.Err() == nil }
