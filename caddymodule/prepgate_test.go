package caddymodule

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gateBody is a request body that records whether the relay has started
// reading it and can hold the rest of it back until released.
type gateBody struct {
	r       io.Reader
	started atomic.Bool
	hold    chan struct{} // nil: nothing is held back
	once    sync.Once
	sent    int // bytes the relay gets before the hold
}

func newGateBody(body string, hold bool) *gateBody {
	b := &gateBody{r: strings.NewReader(body), sent: len(body) / 2}
	if hold {
		b.hold = make(chan struct{})
	}
	return b
}

func (b *gateBody) Read(p []byte) (int, error) {
	b.started.Store(true)
	if b.hold != nil && b.sent <= 0 {
		<-b.hold
	}
	if b.hold != nil && len(p) > b.sent && b.sent > 0 {
		p = p[:b.sent]
	}
	n, err := b.r.Read(p)
	b.sent -= n
	return n, err
}

func (b *gateBody) release() { b.once.Do(func() { close(b.hold) }) }

// serveAsync serves a chat request with body on h and returns its
// recorder once the handler has returned.
func serveAsync(h *Handler, body io.Reader, n int) <-chan *httptest.ResponseRecorder {
	done := make(chan *httptest.ResponseRecorder, 1)
	req := chatRequest(body)
	req.ContentLength = int64(n)
	go func() {
		rec := httptest.NewRecorder()
		_ = h.ServeHTTP(rec, req, nil)
		done <- rec
	}()
	return done
}

func gateChat(tag string) string {
	return `{"model":"gpt-5.2","messages":[{"role":"user","content":"` + tag + " " + strings.Repeat("x", 4096) + `"}]}`
}

// waitFor polls cond until it holds, failing the test after a generous
// bound (the condition is reached in milliseconds; the bound only stops
// a broken build from hanging).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestWaitingRequestHoldsNoBody: while every preparation slot is taken by
// a request whose body is still arriving, the requests behind it wait
// without reading any of their bodies (before the gate, each of them read
// its whole body and held it, and its translation, while it waited for
// the engine's workspace); once the slots free up every request is
// served.
func TestWaitingRequestHoldsNoBody(t *testing.T) {
	h, _ := startRelay(t, true)
	const slots, behind = 2, 5
	h.prep = newPrepGate(slots, time.Hour) // uploads keep their slot

	var stalled []*gateBody
	var done []<-chan *httptest.ResponseRecorder
	for i := range slots {
		body := gateChat(fmt.Sprintf("stalled-%d", i))
		b := newGateBody(body, true)
		t.Cleanup(b.release) // a failed test does not leave it hanging
		stalled = append(stalled, b)
		done = append(done, serveAsync(h, b, len(body)))
		waitFor(t, "the stalled upload to start", b.started.Load)
	}
	var waiting []*gateBody
	for i := range behind {
		body := gateChat(fmt.Sprintf("behind-%d", i))
		b := newGateBody(body, false)
		waiting = append(waiting, b)
		done = append(done, serveAsync(h, b, len(body)))
	}
	read := func() int {
		n := 0
		for _, b := range waiting {
			if b.started.Load() {
				n++
			}
		}
		return n
	}
	waitFor(t, "the requests behind to wait or read", func() bool {
		return relayCounters.prepWaiting.Load() == behind || read() > 0
	})
	if n := read(); n > 0 {
		t.Fatalf("%d of %d requests read their body while %d uploads held every preparation slot", n, behind, slots)
	}
	// status and metrics show the queue and the bytes the budget counts
	// (every request reserved its Content-Length before it queued)
	var declared int64
	for i := range slots {
		declared += int64(len(gateChat(fmt.Sprintf("stalled-%d", i))))
	}
	for i := range behind {
		declared += int64(len(gateChat(fmt.Sprintf("behind-%d", i))))
	}
	if a := buildStatus(context.Background()).Admission; a.PrepWaiting != behind || a.BodyBytes != declared {
		t.Fatalf("status admission = %+v, want prep_waiting %d and body_bytes %d", a, behind, declared)
	}
	for _, b := range stalled {
		b.release()
	}
	for i, ch := range done {
		select {
		case rec := <-ch:
			if rec.Code != http.StatusOK {
				t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("request %d did not finish", i)
		}
	}
	if n := len(h.prep.slots); n != 0 {
		t.Fatalf("%d preparation slots still taken after every request ended", n)
	}
	if a := buildStatus(context.Background()).Admission; a != (AdmissionStatus{}) {
		t.Fatalf("status admission after every request ended = %+v, want zeros", a)
	}
}

// TestSlowUploadGivesBackItsSlot: a body that takes longer than its upload
// turn gives its preparation slot back while it arrives, so a request
// behind it is served meanwhile; the slow request is served once its body
// is in.
func TestSlowUploadGivesBackItsSlot(t *testing.T) {
	h, _ := startRelay(t, true)
	h.prep = newPrepGate(1, time.Millisecond)

	slowBody := gateChat("slow")
	slow := newGateBody(slowBody, true)
	t.Cleanup(slow.release)
	slowDone := serveAsync(h, slow, len(slowBody))
	waitFor(t, "the slow upload to start", slow.started.Load)
	fastBody := gateChat("fast")
	select {
	case rec := <-serveAsync(h, strings.NewReader(fastBody), len(fastBody)):
		if rec.Code != http.StatusOK {
			t.Fatalf("fast request: %d %s", rec.Code, rec.Body)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a slow upload held the only preparation slot")
	}
	slow.release()
	if rec := <-slowDone; rec.Code != http.StatusOK {
		t.Fatalf("slow request: %d %s", rec.Code, rec.Body)
	}
	if n := len(h.prep.slots); n != 0 {
		t.Fatalf("%d preparation slots still taken", n)
	}
}

// TestPrepTicketTurnRace: the upload turn's timer and the end of the
// upload may meet in any order; the slot is then held exactly once, and
// given back exactly once (run with -race).
func TestPrepTicketTurnRace(t *testing.T) {
	g := newPrepGate(1, 0)
	for i := range 2000 {
		tk, err := g.enter(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		tk.uploading()
		if i%2 == 0 {
			time.Sleep(time.Microsecond)
		}
		if err := tk.uploaded(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(g.slots); n != 1 {
			t.Fatalf("round %d: %d slots taken after the upload, want 1", i, n)
		}
		tk.leave()
		tk.leave()
		if n := len(g.slots); n != 0 {
			t.Fatalf("round %d: %d slots taken after leave, want 0", i, n)
		}
	}
}

// TestHTTP2ReadsBeforeItsSlot: an HTTP/2 request reads its body before it
// waits for a preparation slot (its stream shares the connection's
// flow-control window with the streams beside it, which an unread body
// would hold up), and is served once a slot is free.
func TestHTTP2ReadsBeforeItsSlot(t *testing.T) {
	h, _ := startRelay(t, true)
	h.prep = newPrepGate(1, time.Hour)

	stalledBody := gateChat("stalled")
	stalled := newGateBody(stalledBody, true)
	t.Cleanup(stalled.release)
	stalledDone := serveAsync(h, stalled, len(stalledBody))
	waitFor(t, "the stalled upload to start", stalled.started.Load)

	body := gateChat("h2")
	b := &eofBody{r: strings.NewReader(body)}
	req := chatRequest(b)
	req.ContentLength = int64(len(body))
	req.Proto, req.ProtoMajor, req.ProtoMinor = "HTTP/2.0", 2, 0
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		_ = h.ServeHTTP(rec, req, nil)
		done <- rec
	}()
	waitFor(t, "the HTTP/2 request to wait for a slot", func() bool { return relayCounters.prepWaiting.Load() == 1 })
	if !b.eof.Load() {
		t.Fatal("the HTTP/2 request waits for a slot with its body unread")
	}
	stalled.release()
	for _, ch := range []<-chan *httptest.ResponseRecorder{stalledDone, done} {
		select {
		case rec := <-ch:
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("a request did not finish")
		}
	}
}

// eofBody records that it was read to its end.
type eofBody struct {
	r   io.Reader
	eof atomic.Bool
}

func (b *eofBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		b.eof.Store(true)
	}
	return n, err
}
