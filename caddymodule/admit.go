package caddymodule

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// Admission of a model request (chat or responses), in the order admit
// runs it: authenticate the relay token, pin the reasoning cache, count
// the body against the handler's body budget (max_request_bytes_in_flight,
// budget.go), take a preparation slot (prepgate.go), then read the body
// under max_request_bytes and the upload idle deadline. A refusal before
// the body has been read closes the connection or drains the body
// (closeIfBodyUnread), so that the client sees the answer.

// admit opens a model route (chat or responses): it authenticates the
// client, pins the reasoning cache for the request, starts body logging
// and reads the body, which the body log records. ok is false when the
// client has been answered.
func (rq *request) admit() (body []byte, ok bool) {
	if !rq.authenticate() {
		return nil, false
	}
	rq.holdCache()
	rq.bodies = rq.h.bodyLog.Begin(rq.id, 1, rq.h.secrets)
	return rq.readBody()
}

// authenticate checks the client's relay token and keeps it (it is part of
// the cache scope). On failure it has answered 401.
func (rq *request) authenticate() bool {
	token, ok := rq.h.authenticate(rq.r)
	if !ok {
		rq.w.Header().Set("WWW-Authenticate", `Bearer realm="reasoning_relay"`)
		rq.fail(apierr.New(http.StatusUnauthorized, apierr.TypeInvalidRequest, "invalid_api_key",
			"Incorrect API key provided: send a relay token as 'Authorization: Bearer <token>'."), "unauthorized")
		return false
	}
	rq.token = token
	return true
}

// authenticate returns the bearer token r carries and whether it is one of
// the relay tokens. The presented token is hashed and compared with every
// configured token's hash in constant time, without stopping at a match,
// so neither the token nor which token matched leaks through timing.
func (h *Handler) authenticate(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", false
	}
	token := strings.TrimSpace(auth[len(prefix):])
	presented := sha256.Sum256([]byte(token))
	ok := 0
	for i := range h.tokens {
		ok |= subtle.ConstantTimeCompare(presented[:], h.tokens[i][:])
	}
	return token, ok == 1
}

// readBody reads the client's body under the size cap, the body budget
// and the upload idle deadline, in its turn: it refuses what it can before
// reading anything (413 by Content-Length, 415, a budget the declared
// length does not fit), then waits for a preparation slot (prepgate.go)
// and reads the body holding it (an HTTP/2 body is read first, then the
// slot is taken). On failure it has already answered the client.
func (rq *request) readBody() ([]byte, bool) {
	h := rq.h
	if rq.r.ContentLength > h.MaxRequestBytes {
		rq.refuseDeclaredTooLarge()
		return nil, false
	}
	if ce := rq.r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		rq.fail(apierr.New(http.StatusUnsupportedMediaType, apierr.TypeInvalidRequest, "unsupported_content_encoding",
			"Request bodies must not be compressed (Content-Encoding "+sanitizeToken(ce)+" is not supported)."), "unsupported_encoding")
		return nil, false
	}
	rc := http.NewResponseController(rq.w)
	src, fits := rq.budgetedBody(rq.r.Body)
	// HTTP/2 streams share their connection's flow-control window: a
	// stream left unread while it waits would hold up the uploads of the
	// streams beside it (the server buffers a stream's body up to its
	// window anyway), so an HTTP/2 body is read before the slot is taken
	slotFirst := rq.r.ProtoMajor < 2
	err := errBudget
	if fits {
		err = nil
		if slotFirst {
			// the wait for a slot reads nothing: the upload idle
			// deadline starts after it
			err = rq.startPreparation()
		}
	}
	wd := transport.NewWatchdog(time.Duration(h.IdleTimeout), func() {
		// a read deadline in the past makes the blocked read return
		_ = rc.SetReadDeadline(time.Now())
	})
	var body []byte
	if fits && err == nil {
		body, err = rq.readInTurn(src, wd)
	}
	if errors.Is(err, errBudget) {
		if err = discardBody(transport.ProgressReader{R: rq.r.Body, WD: wd}, h.MaxRequestBytes); err == nil {
			rq.bodyRead, err = true, errBudget
		}
	}
	idle := wd.Stop()
	if err == nil {
		rq.bodyRead = true
		if slotFirst {
			return body, true
		}
		if rq.startPreparation() != nil { // only when the request's context ends
			rq.log("client_gone", 499)
			return nil, false
		}
		return body, true
	}
	switch {
	case errors.Is(err, transport.ErrTooLarge):
		rq.fail(tooLarge(h.MaxRequestBytes), "request_too_large")
	case errors.Is(err, errBudget):
		rq.failBusy()
	case idle:
		_ = rc.SetReadDeadline(time.Time{})
		rq.fail(apierr.New(http.StatusRequestTimeout, apierr.TypeTimeout, "upload_timeout",
			"The request body stopped arriving for longer than the relay's idle timeout."), "upload_idle_timeout")
	case rq.r.Context().Err() != nil:
		rq.log("client_gone", 499)
	default:
		rq.fail(apierr.New(http.StatusBadRequest, apierr.TypeInvalidRequest, "body_read_failed",
			"The request body could not be read."), "body_read_failed")
	}
	return nil, false
}

// startPreparation waits for a preparation slot (prepgate.go); the slot
// is the request's until rq.endPreparation.
func (rq *request) startPreparation() error {
	g := rq.h.prep
	if g == nil {
		return nil
	}
	t, err := g.enter(rq.r.Context())
	if err != nil {
		return err
	}
	rq.prep = t
	return nil
}

// readInTurn reads the body from src holding the request's preparation
// slot, giving the slot back while an upload takes longer than its turn
// and taking one again once the body is in.
func (rq *request) readInTurn(src io.Reader, wd *transport.Watchdog) ([]byte, error) {
	rq.prep.uploading()
	body, err := transport.ReadAll(transport.ProgressReader{R: src, WD: wd}, rq.h.MaxRequestBytes, rq.r.ContentLength)
	if err != nil {
		return nil, err
	}
	if err := rq.prep.uploaded(rq.r.Context()); err != nil {
		return nil, err
	}
	return body, nil
}

// endPreparation gives the request's preparation slot back: its body
// has been translated and its cache session prepared (or it failed). It
// is safe to call more than once; request.close calls it too.
func (rq *request) endPreparation() { rq.prep.leave() }

// discardBody reads the rest of a body the budget refused, without keeping
// it (up to limit bytes), so that the client, which is still sending it,
// reliably receives the 503 rather than a reset connection. It returns
// nil when the body was read to its end.
func discardBody(r io.Reader, limit int64) error {
	n, err := io.Copy(io.Discard, io.LimitReader(r, limit+1))
	if err != nil {
		return err
	}
	if n > limit {
		return transport.ErrTooLarge
	}
	return nil
}

func tooLarge(limit int64) *apierr.Error {
	return apierr.New(http.StatusRequestEntityTooLarge, apierr.TypeInvalidRequest, "request_too_large",
		"The request body exceeds the relay's max_request_bytes limit of "+formatBytes(limit)+".")
}

// sanitizeToken keeps a header value printable and short for an error.
func sanitizeToken(s string) string {
	if len(s) > 32 {
		s = s[:32]
	}
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e || r == '"' {
			return '?'
		}
		return r
	}, s)
}

// closeIfBodyUnread marks the response `Connection: close` when the
// request may still have body bytes the relay has not read: a refusal
// before the body (401, 404, 405, 415, a 413 by Content-Length) or in the
// middle of it (a 413 past max_request_bytes, an upload timeout).
//
// Without it, Go's HTTP/1.1 server reads up to 256 KiB of the unread body
// before it sends the answer, so that it can reuse the connection; a
// client that sends its body slowly (or not at all) then holds the
// connection, unanswered, for as long as it likes, without a valid token.
// With it, the answer goes out at once and the connection is closed after
// it. HTTP/2 streams are not affected (the header is dropped there).
//
// It reports whether it did; the caller then hangs up after the answer.
func (rq *request) closeIfBodyUnread() bool {
	if !rq.bodyRead && rq.r.ContentLength != 0 && rq.r.Body != nil {
		rq.w.Header().Set("Connection", "close")
		return true
	}
	return false
}

// lingerAfterRefusal is how long a refused connection stays half-closed
// (our side done, theirs still open) before it is closed, so that the
// client reads the answer before the close can reset the connection. Go's
// own server waits the same 500 ms.
const lingerAfterRefusal = 500 * time.Millisecond

// hangUp ends an HTTP/1 connection after a refusal whose body was not
// read. `Connection: close` alone is not enough: after the handler
// returns, Go's server still reads up to 256 KiB of a chunked body to
// close it cleanly, and waits for a client that sends nothing. So the
// answer is flushed, the connection taken over, its write side closed,
// and the connection closed after lingerAfterRefusal. For HTTP/2 (no
// hijacking) the stream is reset by the server as usual.
func (rq *request) hangUp() {
	rc := http.NewResponseController(rq.w)
	if rc.Flush() != nil {
		return
	}
	conn, brw, err := rc.Hijack()
	if err != nil {
		return
	}
	_ = brw.Flush()
	if cw, ok := conn.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	time.AfterFunc(lingerAfterRefusal, func() { _ = conn.Close() })
}

// refuseDeclaredTooLarge answers 413 to an authenticated request whose
// Content-Length is over max_request_bytes, at once, before reading any of
// the body. A client that is still writing its body when the connection
// closes would then see a connection reset instead of the 413, so the
// relay reads and discards the declared body after the answer (full
// duplex), at most 2 × max_request_bytes and under the upload idle
// deadline (at most maxDrainIdle without progress), and only then closes. A larger declared body is not read: its
// client gets the answer and the closed connection, at no cost to the
// relay. Only authenticated requests reach this point (401 comes first).
func (rq *request) refuseDeclaredTooLarge() {
	h := rq.h
	rc := http.NewResponseController(rq.w)
	rq.drainAfterAnswer = rq.r.ContentLength <= 2*h.MaxRequestBytes && rc.EnableFullDuplex() == nil
	rq.fail(tooLarge(h.MaxRequestBytes), "request_too_large")
	if !rq.drainAfterAnswer {
		return
	}
	_ = rc.Flush()
	wd := transport.NewWatchdog(min(time.Duration(h.IdleTimeout), maxDrainIdle), func() {
		_ = rc.SetReadDeadline(time.Now()) // unblocks the read below
	})
	defer wd.Stop()
	_ = discardBody(transport.ProgressReader{R: rq.r.Body, WD: wd}, rq.r.ContentLength)
}

// maxDrainIdle bounds how long the drain after an early 413 waits for
// the next body bytes.
const maxDrainIdle = 10 * time.Second
