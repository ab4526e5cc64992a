package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
)

// frameConverter turns upstream SSE events into client frames. The chat
// route converts to Chat Completions chunks; the responses route passes
// events through unchanged.
type frameConverter interface {
	// Event appends the frames for one upstream event to dst and reports
	// whether the event was terminal. Terminal frames are appended by
	// Finish, after the caller's bookkeeping.
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

// relayStream copies an upstream SSE answer to the client through conv,
// one flushed write per upstream event, with SSE keepalive comments during
// silence, the backpressure deadline on every write and the delivery
// deadline after the terminal event. Headers must not have been written.
// cancel cancels the upstream request's context. It reports whether a
// successful answer was delivered completely.
func (rq *request) relayStream(ctx context.Context, cancel context.CancelCauseFunc, resp *http.Response, idle *transport.Watchdog, conv frameConverter) bool {
	h := rq.h
	hdr := rq.w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Del("Content-Length")
	h.copyUpstreamHeaders(hdr, resp.Header)
	rq.w.WriteHeader(http.StatusOK)
	rq.wroteBody = true

	ds := transport.NewDownstream(rq.w, time.Duration(h.WriteTimeout))
	defer ds.Close()
	// the status line and headers go out at once, so the client knows the
	// request was accepted even while the model is still thinking
	if err := ds.WriteFlush(nil); err != nil {
		cancel(errClientWrite)
		rq.log("client_write_failed", http.StatusOK)
		return false
	}

	events := make(chan pumped, 1)
	go pump(ctx, transport.ProgressReader{R: resp.Body, WD: idle}, int(h.MaxSSEEventBytes), events)

	var keepalive <-chan time.Time
	var keepTimer *time.Timer
	if ka := time.Duration(*h.SSEKeepalive); ka > 0 {
		keepTimer = time.NewTimer(ka)
		defer keepTimer.Stop()
		keepalive = keepTimer.C
	}
	write := func(p []byte) bool {
		if len(p) == 0 {
			return true
		}
		if err := ds.WriteFlush(h.scrubOut(p)); err != nil {
			cancel(errClientWrite)
			reason := "client_write_failed"
			if errors.Is(err, transport.ErrBackpressure) {
				reason = "backpressure_timeout"
			} else if errors.Is(err, transport.ErrDeliveryTimeout) {
				reason = "delivery_timeout"
			}
			rq.log(reason, http.StatusOK, zap.Int64("bytes_written", ds.Written()))
			return false
		}
		if keepTimer != nil {
			keepTimer.Reset(time.Duration(*h.SSEKeepalive))
		}
		return true
	}
	// abort ends the stream with an error frame and logs reason.
	abort := func(e *apierr.Error, reason string) {
		if write(conv.Fail(nil, e)) {
			rq.log(reason, http.StatusOK, zap.Int64("bytes_written", ds.Written()))
		}
	}

	buf := make([]byte, 0, 4096)
	for {
		select {
		case p := <-events:
			if p.err != nil {
				rq.streamEnded(ctx, p.err, abort)
				return false
			}
			if rq.capUp != nil {
				rq.captureFrame(p.name, p.data)
			}
			var terminal bool
			var err error
			buf, terminal, err = conv.Event(buf[:0], p.name, p.data)
			if err != nil {
				abort(apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "upstream_malformed",
					"The upstream sent an event the relay could not parse."), "upstream_malformed")
				return false
			}
			if !write(buf) {
				return false
			}
			if terminal {
				idle.Stop()
				ds.SetDeliveryDeadline(time.Now().Add(time.Duration(h.DeliveryTimeout)))
				if !write(conv.Finish(buf[:0])) {
					return false
				}
				cancel(errFinished)
				if !conv.Succeeded() {
					rq.log("upstream_failed_response", http.StatusOK, zap.Int64("bytes_written", ds.Written()))
					return false
				}
				rq.log("ok", http.StatusOK, zap.Int64("bytes_written", ds.Written()))
				return true
			}
		case <-keepalive:
			if !write([]byte(": keepalive\n\n")) {
				return false
			}
		case <-ctx.Done():
			// the pump reports idle timeouts and read errors itself; here
			// only the client going away is left
			rq.streamEnded(ctx, context.Cause(ctx), abort)
			return false
		}
	}
}

// streamEnded handles the end of an upstream stream before its terminal
// event: a stream that ends without one never becomes a successful answer.
func (rq *request) streamEnded(ctx context.Context, err error, abort func(*apierr.Error, string)) {
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
