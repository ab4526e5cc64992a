package caddymodule

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
func (rq *request) closeIfBodyUnread() {
	if !rq.bodyRead && rq.r.ContentLength != 0 && rq.r.Body != nil {
		rq.w.Header().Set("Connection", "close")
	}
}
