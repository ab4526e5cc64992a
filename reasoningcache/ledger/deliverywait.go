package ledger

import (
	"sync"
	"time"
)

// DeliveryWait bounds how long CreateIntent waits for a competing intent
// that has reached delivery to end before it refuses the plan.
//
// A plan is refused while another intent is unresolved at the request's
// start. An intent in delivery has its outcome recorded and is only
// writing its last bytes; its end is queued right after. But the client
// sees those bytes first, and its next request, on another connection,
// can reach CreateIntent before that end is queued: refused, it would go
// out without replay. So CreateIntent waits for it, briefly.
const DeliveryWait = 50 * time.Millisecond

// deliveryWait is DeliveryWait; tests change it.
var deliveryWait = DeliveryWait

// testHookDeliveryWait, when set, runs when CreateIntent starts waiting
// for a delivering intent to end.
var testHookDeliveryWait func()

// intentEnds tells CreateIntent that an intent end (a resolve or a
// poison) was queued in the writer.
type intentEnds struct {
	mu sync.Mutex
	ch chan struct{}
}

// next returns a channel closed by the next intent end queued after this
// call.
func (e *intentEnds) next() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch == nil {
		e.ch = make(chan struct{})
	}
	return e.ch
}

// queued wakes whoever waits for an intent end.
func (e *intentEnds) queued() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ch != nil {
		close(e.ch)
		e.ch = nil
	}
}
