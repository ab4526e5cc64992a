package caddymodule

import (
	"context"
	"sync/atomic"
	"time"
)

// A delivered session is ended without waiting for its resolve commit (an
// fsync): the client sees the end of the answer when ServeHTTP returns
// (the last chunk of a stream, the next request on the connection), and
// that no longer waits for the commit. The commit is queued before, in
// the ledger's order of writes. Durability does not depend on it: the
// observation was committed before the terminal chunk, and a crash before
// the resolve leaves an unresolved intent that startup poisons, the
// outcome the design allows for any request whose end was not recorded.

// settling counts delivered sessions whose end has not been committed yet.
var settling atomic.Int64

// settleWait bounds how long the status waits for them.
const settleWait = 2 * time.Second

// deliveredAfterResponse ends a delivered session (exactly once, as every
// end) and waits for its commit in the background. The request's pin of
// the ledger moves to that wait, so that a reload or shutdown closes the
// ledger only after the resolve, as it would for a request still running.
func (rq *request) deliveredAfterResponse(ctx context.Context, cs *cacheSession) {
	if cs == nil {
		return
	}
	unpin := rq.unpin
	rq.unpin = nil
	settling.Add(1)
	// the session ends now and its commit is queued ahead of any later
	// write (the next request at the same position must find the intent
	// resolved, or it could not replay); only the wait for the commit
	// moves off the response
	wait := cs.s.DeliveredQueued(context.WithoutCancel(ctx))
	go func() {
		defer settling.Add(-1)
		if unpin != nil {
			defer unpin()
		}
		wait()
	}()
}

// awaitSettled waits (at most settleWait) until the sessions delivered so
// far have ended, so that the status reports an answered request as
// ended.
func awaitSettled(ctx context.Context) {
	deadline := time.Now().Add(settleWait)
	for settling.Load() > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
}
