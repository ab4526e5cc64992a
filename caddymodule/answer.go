package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/redact"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// Writing a model answer to the client: a JSON body (writeJSON) or an
// event stream relayed frame by frame up to its terminal event
// (relayEvents) and then ended (endStream).
//
// The relay knows its own credentials exactly (Handler.secrets). Whatever
// it sends to a client passes through redact with them: error messages
// (with redact.Text, which also catches credential-shaped tokens), every
// answer body and every SSE frame (with redact.Secrets, which replaces
// only the exact values, so that model output is otherwise untouched) and
// the upstream headers it passes on (copyUpstreamHeaders). An upstream error that arrives inside
// a 200 (an SSE `error` or `response.failed` event, a JSON answer with
// `status: "failed"`) is thus scrubbed like a non-2xx one, on every route.

// scrubError returns a copy of e with its message, param, code and type
// scrubbed of the relay's credentials and of credential-shaped tokens.
func (h *Handler) scrubError(e *apierr.Error) *apierr.Error {
	c := *e
	c.Message = redact.Text(e.Message, h.secrets...)
	c.Param = redact.Text(e.Param, h.secrets...)
	c.Code = redact.Text(e.Code, h.secrets...)
	c.Type = redact.Text(e.Type, h.secrets...)
	return &c
}

// scrubOut returns p, an answer body or SSE frame about to be written to
// the client, without the relay's credentials.
func (h *Handler) scrubOut(p []byte) []byte {
	p, _ = redact.Secrets(p, h.secrets...)
	return p
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
	rq.logClientResponse(http.StatusOK)
	ds := transport.NewDownstream(rq.w, time.Duration(rq.h.WriteTimeout))
	defer ds.Close()
	ds.SetDeliveryDeadline(time.Now().Add(time.Duration(rq.h.DeliveryTimeout)))
	if err := ds.WriteFlush(body); err != nil {
		rq.log("client_write_failed", http.StatusOK, zap.Error(err))
		return false
	}
	rq.clientBody.Write(body)
	rq.log("ok", http.StatusOK, zap.Int("bytes_written", len(body)))
	return true
}

// frameConverter turns upstream SSE events into client frames. The chat
// route converts to Chat Completions chunks; the responses route passes
// events through unchanged.
type frameConverter interface {
	// Event appends the frames for one upstream event to dst and reports
	// whether the event was terminal. The terminal frames are appended by
	// Finish, after the caller's bookkeeping (the cache commits its
	// observation in between).
	Event(dst []byte, name string, data []byte) (out []byte, terminal bool, err error)
	// Finish appends the terminal frames.
	Finish(dst []byte) []byte
	// Fail appends the frame that reports an abnormal end of the stream.
	Fail(dst []byte, e *apierr.Error) []byte
	// Succeeded reports, after the terminal event, whether it was a
	// successful one (completed or incomplete) rather than a failure.
	Succeeded() bool
}

// pumped is one upstream event (or the error that ended the stream),
// handed from the reading goroutine to the writing one.
type pumped struct {
	name string
	data []byte
	err  error
}

// pump reads SSE events from body and sends them on a channel until the
// stream ends or ctx is done. Each event is copied: the reader reuses its
// buffer.
func pump(ctx context.Context, body io.Reader, maxEvent int, out chan<- pumped) {
	sr := transport.NewSSEReader(body, maxEvent)
	for {
		ev, err := sr.Next()
		p := pumped{err: err}
		if err == nil {
			p.name = ev.Name
			p.data = append([]byte(nil), ev.Data...)
		}
		select {
		case out <- p:
		case <-ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// eventStream is an event-stream answer being written to the client: one
// flushed write per frame, each under the backpressure deadline (and the
// delivery deadline once the upstream has finished), with keepalive
// comments while it is silent. What reaches the client is recorded by the
// body log.
type eventStream struct {
	rq *request
	ds *transport.Downstream
	// cancel cancels the upstream request when a client write fails
	cancel context.CancelCauseFunc
	// keep fires the next keepalive; nil when keepalives are off
	keep *time.Timer
}

// openStream writes the status line and headers of an event-stream answer
// and flushes them at once, so that the client knows the request was
// accepted even while the model is still thinking. Headers must not have
// been written. Call close when the stream ends.
func (rq *request) openStream(cancel context.CancelCauseFunc, upstreamHeader http.Header) (*eventStream, bool) {
	h := rq.h
	hdr := rq.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Del("Content-Length")
	h.copyUpstreamHeaders(hdr, upstreamHeader)
	rq.w.WriteHeader(http.StatusOK)
	rq.wroteBody = true
	rq.logClientResponse(http.StatusOK)

	es := &eventStream{rq: rq, ds: transport.NewDownstream(rq.w, time.Duration(h.WriteTimeout)), cancel: cancel}
	if err := es.ds.WriteFlush(nil); err != nil {
		cancel(errClientWrite)
		rq.log("client_write_failed", http.StatusOK)
		es.close()
		return nil, false
	}
	if ka := time.Duration(*h.SSEKeepalive); ka > 0 {
		es.keep = time.NewTimer(ka)
	}
	return es, true
}

// keepalive fires when the stream has been silent for sse_keepalive; it
// never fires when keepalives are off.
func (es *eventStream) keepalive() <-chan time.Time {
	if es.keep == nil {
		return nil
	}
	return es.keep.C
}

// write sends p (scrubbed of the relay's credentials) and flushes it. On
// failure it cancels the upstream request, logs the reason and reports
// false.
func (es *eventStream) write(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	rq := es.rq
	p = rq.h.scrubOut(p)
	if err := es.ds.WriteFlush(p); err != nil {
		es.cancel(errClientWrite)
		reason := "client_write_failed"
		if errors.Is(err, transport.ErrBackpressure) {
			reason = "backpressure_timeout"
		} else if errors.Is(err, transport.ErrDeliveryTimeout) {
			reason = "delivery_timeout"
		}
		rq.log(reason, http.StatusOK, zap.Int64("bytes_written", es.ds.Written()))
		return false
	}
	rq.clientBody.Write(p)
	if es.keep != nil {
		es.keep.Reset(time.Duration(*rq.h.SSEKeepalive))
	}
	return true
}

// abort ends the stream with conv's error frame and logs reason.
func (es *eventStream) abort(conv frameConverter, e *apierr.Error, reason string) {
	if es.write(conv.Fail(nil, e)) {
		es.rq.log(reason, http.StatusOK, zap.Int64("bytes_written", es.ds.Written()))
	}
}

// close stops the stream's timers.
func (es *eventStream) close() {
	if es.keep != nil {
		es.keep.Stop()
	}
	es.ds.Close()
}

// relayEvents copies an upstream event stream to the client through conv
// up to and including the upstream's terminal event, and returns there,
// before the terminal frames (conv.Finish) are written: the caller writes
// them with endStream, after its own bookkeeping. From the terminal event
// on, writes are bounded by the delivery deadline. On failure (the stream
// ended early, the client went away) the client has been answered with an
// error frame where possible and the stream is closed.
func (rq *request) relayEvents(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, idle *transport.Watchdog, conv frameConverter) (es *eventStream, ok bool) {
	es, ok = rq.openStream(cancel, resp.Header)
	if !ok {
		return nil, false
	}
	defer func() {
		if !ok {
			es.close()
		}
	}()
	events := make(chan pumped, 1)
	go pump(ctx, transport.ProgressReader{R: resp.Body, WD: idle}, int(rq.h.MaxSSEEventBytes), events)

	buf := make([]byte, 0, 4096)
	for {
		select {
		case p := <-events:
			if p.err != nil {
				rq.streamEnded(ctx, p.err, es, conv)
				return es, false
			}
			rq.logUpstreamFrame(p.name, p.data)
			var terminal bool
			var err error
			buf, terminal, err = conv.Event(buf[:0], p.name, p.data)
			if err != nil {
				es.abort(conv, apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
					"The upstream sent an event the relay could not parse."), "upstream_malformed")
				return es, false
			}
			if !es.write(buf) {
				return es, false
			}
			if terminal {
				idle.Stop()
				es.ds.SetDeliveryDeadline(time.Now().Add(time.Duration(rq.h.DeliveryTimeout)))
				return es, true
			}
		case <-es.keepalive():
			if !es.write([]byte(": keepalive\n\n")) {
				return es, false
			}
		case <-ctx.Done():
			// the pump reports idle timeouts and read errors itself; here
			// only the client going away is left
			rq.streamEnded(ctx, context.Cause(ctx), es, conv)
			return es, false
		}
	}
}

// endStream writes the terminal frames of a stream relayEvents returned,
// closes it and reports whether a successful answer was delivered
// completely.
func (rq *request) endStream(es *eventStream, conv frameConverter) bool {
	defer es.close()
	if !es.write(conv.Finish(nil)) {
		return false
	}
	es.cancel(errFinished)
	if !conv.Succeeded() {
		rq.log("upstream_failed_response", http.StatusOK, zap.Int64("bytes_written", es.ds.Written()))
		return false
	}
	rq.log("ok", http.StatusOK, zap.Int64("bytes_written", es.ds.Written()))
	return true
}

// streamEnded handles the end of an upstream stream before its terminal
// event: a stream that ends without one never becomes a successful answer.
func (rq *request) streamEnded(ctx context.Context, err error, es *eventStream, conv frameConverter) {
	abort := func(e *apierr.Error, reason string) { es.abort(conv, e, reason) }
	switch {
	case rq.r.Context().Err() != nil:
		rq.log("client_gone", http.StatusOK)
	case errors.Is(context.Cause(ctx), errUpstreamIdle):
		abort(apierr.New(http.StatusGatewayTimeout, apierr.TypeTimeout, "upstream_timeout",
			"The upstream stopped sending for longer than the relay's idle timeout."), "upstream_idle_timeout")
	case errors.Is(err, transport.ErrEventTooLarge):
		abort(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_event_too_large",
			"The upstream sent an event larger than the relay's max_sse_event_bytes."), "sse_event_too_large")
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		abort(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_truncated",
			"The upstream stream ended before the response was complete."), "upstream_truncated")
	case errors.Is(err, transport.ErrMalformed):
		abort(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
			"The upstream sent a malformed event stream."), "upstream_malformed")
	default:
		abort(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_read_failed",
			"Reading the upstream stream failed before the response was complete."), "upstream_read_failed")
	}
}
