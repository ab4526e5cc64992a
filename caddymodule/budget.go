package caddymodule

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// The body budget (max_request_bytes_in_flight) bounds the client body
// bytes one handler holds at once, across its requests. A body counts from
// the moment the relay starts reading it (all of its Content-Length at
// once, or step by step as a body of unknown length arrives) until the
// upstream has answered its request: by then the relay holds neither the
// body nor its translation (the transport keeps the upstream body only
// for a resend before an answer), and the answer, however long it
// streams, is not counted. A request whose body ends before an answer
// gives its bytes back when it ends.
//
// A body whose declared length does not fit waits up to budgetWait for
// bytes to be given back, holding nothing, before it is refused with 503;
// a body of unknown length that outgrows the budget is refused as soon as
// it does.

// DefaultMaxRequestBytesInFlight is the default budget of client body
// bytes held at once (at least max_request_bytes).
const DefaultMaxRequestBytesInFlight = 256 << 20

// budgetWait is how long a body of known length waits for the budget
// before its request is refused. Bytes come back as soon as an upstream
// answers, so a short wait turns most refusals of a burst into a delay.
const budgetWait = 5 * time.Second

// budgetStep is the most a body of unknown length reads (and reserves)
// at a time as it arrives.
const budgetStep = 64 << 10

// errBudget is returned by a budgetReader that could not reserve more.
var errBudget = errors.New("request body budget exhausted")

// bodyBudget is one handler's body budget.
type bodyBudget struct {
	mu    sync.Mutex
	limit int64
	used  int64
	wait  time.Duration // how long a known length waits; 0: budgetWait
	freed chan struct{} // closed by the next release; nil when nobody waits
}

// reserve counts n more bytes and reports whether they fit.
func (b *bodyBudget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	relayCounters.bodyBytes.Add(n)
	return true
}

// reserveWait is reserve, waiting up to b.wait for bytes to be given back
// when n does not fit now. It gives up early when ctx ends.
func (b *bodyBudget) reserveWait(ctx context.Context, n int64) bool {
	if n > b.limit {
		return false
	}
	var deadline <-chan time.Time
	for {
		b.mu.Lock()
		if b.used+n <= b.limit {
			b.used += n
			b.mu.Unlock()
			relayCounters.bodyBytes.Add(n)
			return true
		}
		if b.freed == nil {
			b.freed = make(chan struct{})
		}
		freed := b.freed
		b.mu.Unlock()
		if deadline == nil {
			t := time.NewTimer(b.waitLimit())
			defer t.Stop()
			deadline = t.C
		}
		select {
		case <-freed:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// waitLimit is how long a body of known length waits for room.
func (b *bodyBudget) waitLimit() time.Duration {
	if b.wait > 0 {
		return b.wait
	}
	return budgetWait
}

// release gives n bytes back and wakes the bodies waiting for them.
func (b *bodyBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	relayCounters.bodyBytes.Add(-n)
	if b.freed != nil {
		close(b.freed)
		b.freed = nil
	}
	b.mu.Unlock()
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
// Content-Length fits, at once or after waiting for it (fits is false
// when it does not: nothing may be read or allocated for it), or, for a
// body of unknown length, a reader that reserves as it reads and fails
// with errBudget past the budget.
func (rq *request) budgetedBody(r io.Reader) (src io.Reader, fits bool) {
	b := rq.h.budget
	if b == nil {
		return r, true
	}
	if cl := rq.r.ContentLength; cl > 0 {
		if !b.reserveWait(rq.r.Context(), cl) {
			return nil, false
		}
		rq.held = cl
		return r, true
	}
	return &budgetReader{r: r, b: b, held: &rq.held}, true
}

// releaseBody gives the request's reservation back: once the upstream has
// answered it (the relay holds its body no more), or when it ends.
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
