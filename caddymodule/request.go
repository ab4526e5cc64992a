package caddymodule

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache"
)

// Causes with which a request's upstream context is cancelled. They decide
// the reason code that is logged and the error the client gets.
var (
	errUpstreamIdle = errors.New("upstream idle timeout")
	errClientWrite  = errors.New("client write failed")
	errFinished     = errors.New("request finished")
)

// request is the state of one relayed request. It lives on the request's
// goroutine; its context is the HTTP request's (r.Context()), never a copy.
type request struct {
	h     *Handler
	id    string
	w     http.ResponseWriter
	r     *http.Request
	start time.Time
	route string // chat, responses or models once routed (a metrics label)
	token string // the relay token the client authenticated with
	// wroteBody is set once the response status went out with a body to
	// follow: from then on a failure is an interruption, not a refusal
	wroteBody bool
	engine    *reasoningcache.Engine // nil when the reasoning cache is off
	unpin     func()                 // releases the request's pin of the cache's ledger

	// body logging (log_bodies): nil when off; see bodylog.go
	bodies       *bodylog.Request
	upstreamBody *bodylog.Body // the upstream_response phase, once started
	clientBody   *bodylog.Body // the client_response phase, once started

	// bodyRead is set once the client's body has been read to its end
	bodyRead bool
	// drainAfterAnswer is set when an early 413 reads and discards the
	// declared body after its answer instead of hanging up
	drainAfterAnswer bool
	// held is the request's reservation of the handler's body budget
	held int64
}

// close releases what the request holds once it has been answered: the
// body log's open phases, the cache pin and the body budget. ServeHTTP
// defers it.
func (rq *request) close() {
	rq.bodies.Finish()
	if rq.unpin != nil {
		rq.unpin()
	}
	rq.releaseBody()
}

// fail writes e as the response (nothing may have been written yet) and
// logs reason.
func (rq *request) fail(e *apierr.Error, reason string) {
	e = rq.h.scrubError(e)
	closing := rq.closeIfBodyUnread()
	body := apierr.Write(rq.w, e)
	rq.logClientResponse(e.HTTPStatus())
	rq.clientBody.Write(body)
	rq.log(reason, e.HTTPStatus(), zap.String("error_type", e.Type), zap.String("error_code", e.Code))
	if closing && !rq.drainAfterAnswer {
		rq.hangUp()
	}
}

// log records the outcome of a request with a fixed reason code. Bodies,
// credentials and ciphertext are never logged. Outcomes that need an
// operator's attention (upstream failures, timeouts) are warnings; the
// rest is debug output.
func (rq *request) log(reason string, status int, fields ...zap.Field) {
	rq.bodies.SetOutcome(reason)
	countRequest(rq.route, reason)
	level := zapcore.DebugLevel
	if isWarning(reason) {
		level = zapcore.WarnLevel
	}
	ce := rq.h.logger.Check(level, "request finished")
	if ce == nil {
		return
	}
	fields = append(fields,
		zap.String("request_id", rq.id),
		zap.String("reason", reason),
		zap.Int("status", status),
		zap.Duration("duration", time.Since(rq.start)),
	)
	ce.Write(fields...)
}

// isWarning reports whether a reason code deserves a warning.
func isWarning(reason string) bool {
	switch {
	case strings.HasPrefix(reason, "upstream_"), strings.HasSuffix(reason, "_timeout"),
		reason == "sse_event_too_large", reason == "response_too_large":
		return true
	}
	return false
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
