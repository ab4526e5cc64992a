package caddymodule

import (
	"net/http"
	"sync/atomic"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bufpool"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/translate"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/transport"
)

// recycler gives a chat request's two large buffers, the client's body
// and the buffer its input items were translated into, back to package
// bufpool once nothing can read them any more, so that the next request
// of a long history reuses them instead of allocating (and the garbage
// collector marking the heap for) megabytes afresh. The body goes back as
// soon as the translation reports that no byte of it is referenced
// (translate.Request.ReleaseClientBody, before the upstream call; a body
// some of whose messages are sent as they came waits for the items).
// Nothing can read the items once the upstream has accepted the request
// (the translation then drops them, see postChat) or serveChat has
// returned, whichever comes first, and the upstream transport has closed
// every body it was given (it may write a body on after the answer
// arrived): each is a hold on the buffers, and the last one let go
// recycles them. A request that waits or streams for minutes thus holds
// no more meanwhile than before.
//
// Only a request with neither a reasoning cache session nor a body log
// recycles: a cache session keeps input items and history for its ledger
// writes after the response, and the body log keeps what it records.
// Every other request leaves its buffers to the garbage collector, as
// before.
type recycler struct {
	holds    atomic.Int32
	body     []byte
	treq     *translate.Request
	released bool // the handler's hold is let go (serveChat's goroutine only)
}

// newRecycler returns the recycler of a request's body, or nil when the
// request must not recycle (see recycler). The caller holds it once and
// lets go with release.
func (rq *request) newRecycler(body []byte) *recycler {
	if rq.engine != nil || rq.bodies != nil || body == nil {
		return nil
	}
	rc := &recycler{body: body}
	rc.holds.Store(1)
	return rc
}

// translated records the translation of the body (nil when it failed).
func (rc *recycler) translated(treq *translate.Request) {
	if rc != nil {
		rc.treq = treq
	}
}

// upstream holds the buffers until the transport has let go of req's body.
func (rc *recycler) upstream(req *http.Request) {
	if rc == nil {
		return
	}
	rc.holds.Add(1)
	transport.OnBodyReleased(req, rc.done)
}

// bodyFree recycles the body at once: the translation references no byte
// of it any more (translate.Request.ReleaseClientBody), and neither does
// anything else of a request that recycles. A request that waits long for
// its answer thus does not hold its body meanwhile, as before.
func (rc *recycler) bodyFree() {
	if rc == nil || rc.body == nil {
		return
	}
	bufpool.Put(rc.body)
	rc.body = nil
}

// release lets go of the handler's hold; more calls do nothing. Nothing
// of the request may reference the body or the translation's input items
// from then on.
func (rc *recycler) release() {
	if rc == nil || rc.released {
		return
	}
	rc.released = true
	rc.done()
}

// done lets go of one hold; the last recycles the buffers.
func (rc *recycler) done() {
	if rc == nil || rc.holds.Add(-1) != 0 {
		return
	}
	if rc.treq != nil {
		rc.treq.Recycle()
	}
	if rc.body != nil {
		bufpool.Put(rc.body)
	}
	rc.body, rc.treq = nil, nil
}
