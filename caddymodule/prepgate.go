package caddymodule

import (
	"context"
	"sync"
	"time"
)

// Preparation admission. A model request is prepared in three steps that
// each hold its whole body: reading it, translating it (the translation
// is about as large again) and preparing its cache session, which waits
// for the engine's one preparation workspace (Engine.Prepare) and commits
// an intent or a start-poison marker. When many large requests arrive at
// once, the workspace queue is where they wait; a request that waited
// there after reading its body held about twice its body for the whole
// wait, and 100 concurrent 1 MiB histories held about 150 MiB in that
// queue alone.
//
// So a request takes a preparation slot before it reads its body, and
// gives it back once it is prepared (or has failed): a request waiting for
// a slot has read nothing, and at most prepSlots requests per handler hold
// a body they have not yet sent upstream. Its body stays in the client's
// socket meanwhile. A slow upload does not keep its slot: past
// prepUploadTurn the slot is given back and the request takes one again
// once its body has arrived (it then waits holding its body, as every
// request did before; the bytes budget bounds those). An HTTP/2 request
// reads its body before it takes a slot (readBody says why).

// prepSlots is how many requests of one handler are prepared at once.
// Preparation is mostly CPU (the body scan, the translation, the
// canonical digests) and one fsync'd commit, and the workspace takes one
// request at a time, so a few slots keep the workspace busy and let
// commits group; more only hold more bodies.
const prepSlots = 8

// prepUploadTurn is how long a request may take to upload its body while
// it holds a preparation slot. A body that takes longer gives the slot
// back while it arrives, so that slow uploads cannot hold up the requests
// behind them.
const prepUploadTurn = 250 * time.Millisecond

// prepGate hands out a handler's preparation slots in the order requests
// ask for them.
type prepGate struct {
	slots chan struct{}
	turn  time.Duration // prepUploadTurn (tests shorten or lengthen it)
}

func newPrepGate(slots int, turn time.Duration) *prepGate {
	return &prepGate{slots: make(chan struct{}, slots), turn: turn}
}

// prepTicket is one request's preparation slot. Its methods are safe on a
// nil ticket (no gate) and may be called from the upload timer's
// goroutine.
type prepTicket struct {
	g     *prepGate
	mu    sync.Mutex
	held  bool
	timer *time.Timer
}

// enter waits for a slot. It fails only when ctx ends first.
func (g *prepGate) enter(ctx context.Context) (*prepTicket, error) {
	t := &prepTicket{g: g}
	return t, t.take(ctx)
}

// take waits for a slot for t, which holds none.
func (t *prepTicket) take(ctx context.Context) error {
	g := t.g
	select {
	case g.slots <- struct{}{}: // a free slot: no waiting counted
	default:
		relayCounters.prepWaiting.Add(1) // status and metrics (admission)
		defer relayCounters.prepWaiting.Add(-1)
		select {
		case g.slots <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	t.mu.Lock()
	t.held = true
	t.mu.Unlock()
	return nil
}

// leave gives the slot back, if t holds it.
func (t *prepTicket) leave() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	if t.held {
		t.held = false
		<-t.g.slots
	}
}

// uploading starts the upload turn: if the body has not arrived when the
// turn ends, the slot is given back while it does.
func (t *prepTicket) uploading() {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held {
		t.timer = time.AfterFunc(t.g.turn, t.yield)
	}
}

// yield gives the slot back at the end of an upload turn.
func (t *prepTicket) yield() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.held && t.timer != nil {
		t.held = false
		<-t.g.slots
	}
}

// uploaded ends the upload turn; when the slot was given back meanwhile,
// it waits for one again.
func (t *prepTicket) uploaded(ctx context.Context) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	held := t.held
	t.mu.Unlock()
	if held {
		return nil
	}
	return t.take(ctx)
}
