package caddymodule

import (
	"errors"
	"io"
	"net/http"
	"sync"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/transport"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// DefaultMaxRequestBytesInFlight is the default budget of client body
// bytes held at once (at least max_request_bytes).
const DefaultMaxRequestBytesInFlight = 256 << 20

// budgetStep is the most a body of unknown length reads (and reserves)
// at a time as it arrives.
const budgetStep = 64 << 10

// errBudget is returned by a budgetReader that could not reserve more.
var errBudget = errors.New("request body budget exhausted")

// bodyBudget bounds the client body bytes one handler holds at once,
// across its requests: a body is counted from the moment the relay starts
// reading it (all of its Content-Length at once, or step by step as a
// body of unknown length arrives) until its request ends. The relay's
// memory for large bodies is about twice the bytes counted here.
type bodyBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
}

// reserve counts n more bytes and reports whether they fit.
func (b *bodyBudget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

// release gives n bytes back.
func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse returns the bytes counted now.
func (b *bodyBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// budgetReader reserves budget for a body of unknown length as it is read.
type budgetReader struct {
	r    io.Reader
	b    *bodyBudget
	held *int64 // the request's reservation, released when it ends
	read int64
}

// Read reserves budget for what it may read (at most budgetStep at a
// time) before reading it, and fails with errBudget when it cannot.
func (br *budgetReader) Read(p []byte) (int, error) {
	if len(p) > budgetStep {
		p = p[:budgetStep]
	}
	if need := br.read + int64(len(p)) - *br.held; need > 0 {
		if !br.b.reserve(need) {
			return 0, errBudget
		}
		*br.held += need
	}
	n, err := br.r.Read(p)
	br.read += int64(n)
	return n, err
}

// budgetedBody counts the request's body against the handler's budget and
// returns the reader to read it through: r itself when its whole
// Content-Length fits (fits is false when it does not: nothing may be
// read or allocated for it), or, for a body of unknown length, a reader
// that reserves as it reads and fails with errBudget past the budget.
func (rq *request) budgetedBody(r io.Reader) (src io.Reader, fits bool) {
	b := rq.h.budget
	if b == nil {
		return r, true
	}
	if cl := rq.r.ContentLength; cl > 0 {
		if !b.reserve(cl) {
			return nil, false
		}
		rq.held = cl
		return r, true
	}
	return &budgetReader{r: r, b: b, held: &rq.held}, true
}

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

// releaseBody gives the request's reservation back; ServeHTTP defers it.
func (rq *request) releaseBody() {
	if rq.held > 0 {
		rq.h.budget.release(rq.held)
		rq.held = 0
	}
}

// failBusy answers 503 when the body budget is exhausted. The client is
// authenticated and its body has been discarded (bodyRead), so the
// connection stays usable.
func (rq *request) failBusy() {
	rq.w.Header().Set("Retry-After", "1")
	rq.fail(apierr.New(http.StatusServiceUnavailable, apierr.TypeServer, "server_busy",
		"The relay is holding as many request bytes as its max_request_bytes_in_flight allows; retry shortly."), "request_budget_exhausted")
}
