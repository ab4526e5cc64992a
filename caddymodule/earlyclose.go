package caddymodule

import (
	"net/http"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
)

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
