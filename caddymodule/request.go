package caddymodule

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

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
	// prep is the request's preparation slot (prepgate.go), nil before
	// it has one
	prep *prepTicket
}

// newRequestID returns a random request ID such as
// "rr_5f3a9c0d1e2b4a6c8d9e0f1a" (96 bits, unique across restarts).
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "rr_" + hex.EncodeToString(b[:])
}

// close releases what the request holds once it has been answered: the
// body log's open phases, the cache pin, a preparation slot a failed
// request still holds and the body budget. ServeHTTP defers it.
func (rq *request) close() {
	rq.endPreparation()
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
