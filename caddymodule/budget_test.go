package caddymodule

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// holdingUpstream is the fake upstream with requests that it holds: a
// request whose body contains a hold's tag is held until the hold is
// released, either before the upstream answers (the relay's Do has not
// returned) or just after the first event of its answer was flushed.
type holdingUpstream struct {
	next  http.Handler
	mu    sync.Mutex
	holds map[string]*upstreamHold
}

type upstreamHold struct {
	afterHeaders     bool
	reached, release chan struct{}
	once             sync.Once
}

// free releases the held request (once; the test's cleanup frees every
// hold, so that a failed test does not leave the upstream hanging).
func (h *upstreamHold) free() { h.once.Do(func() { close(h.release) }) }

func newHoldingUpstream() *holdingUpstream {
	return &holdingUpstream{next: fakeupstream.New(fakeupstream.Options{APIKey: "sk-test"}), holds: map[string]*upstreamHold{}}
}

// hold registers tag; the returned hold's reached is closed when a request
// with tag is held.
func (u *holdingUpstream) hold(t *testing.T, tag string, afterHeaders bool) *upstreamHold {
	h := &upstreamHold{afterHeaders: afterHeaders, reached: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(h.free)
	u.mu.Lock()
	u.holds[tag] = h
	u.mu.Unlock()
	return h
}

func (u *holdingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	u.mu.Lock()
	var h *upstreamHold
	for tag, x := range u.holds {
		if bytes.Contains(body, []byte(tag)) {
			h = x
			delete(u.holds, tag)
		}
	}
	u.mu.Unlock()
	switch {
	case h == nil:
	case h.afterHeaders:
		w = &flushHold{ResponseWriter: w, h: h}
	default:
		close(h.reached)
		<-h.release
	}
	u.next.ServeHTTP(w, r)
}

// flushHold holds a response after its first flush.
type flushHold struct {
	http.ResponseWriter
	h    *upstreamHold
	once sync.Once
}

func (f *flushHold) Flush() {
	f.ResponseWriter.(http.Flusher).Flush()
	f.once.Do(func() {
		close(f.h.reached)
		<-f.h.release
	})
}

// budgetChat is a chat request of about 64 KiB with tag in its message.
func budgetChat(tag string, stream bool) string {
	return `{"model":"gpt-5.2","stream":` + map[bool]string{false: "false", true: "true"}[stream] +
		`,"messages":[{"role":"user","content":"` + tag + " " + strings.Repeat("b", 64<<10) + `"}]}`
}

// await waits for ch, failing after a bound that only stops a broken build
// from hanging.
func await[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestBodyBudgetFreedAtTheAnswer: a request's body stops counting against
// max_request_bytes_in_flight once the upstream has answered it, so a long
// answer does not hold the budget: while A's answer streams, B, which does
// not fit beside A's body, is served. Before, A's body counted until A
// ended and B got 503 at once.
func TestBodyBudgetFreedAtTheAnswer(t *testing.T) {
	up := newHoldingUpstream()
	h := startRelayTo(t, true, up)
	a, b := budgetChat("budget-a", true), budgetChat("budget-b", false)
	h.budget = &bodyBudget{limit: int64(len(a) + len(b)/2), wait: time.Hour}

	held := up.hold(t, "budget-a", true)
	aDone := serveAsync(h, strings.NewReader(a), len(a))
	await(t, "A's answer to start", held.reached)
	rec := await(t, "B", serveAsync(h, strings.NewReader(b), len(b)))
	if rec.Code != http.StatusOK {
		t.Fatalf("B while A's answer streams: %d %s", rec.Code, rec.Body)
	}
	held.free()
	if rec := await(t, "A", aDone); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "[DONE]") {
		t.Fatalf("A: %d %s", rec.Code, rec.Body)
	}
	if h.budget.used != 0 {
		t.Fatalf("%d bytes still counted after every request ended", h.budget.used)
	}
}

// TestBodyBudgetWaitsForKnownLength: a body of known length that does not
// fit waits, holding nothing and reading nothing, until bytes are given
// back, and is then served; past the wait it gets 503 server_busy with
// Retry-After. A body of unknown length that does not fit is refused at
// once. Before, the body of known length got 503 at once.
func TestBodyBudgetWaitsForKnownLength(t *testing.T) {
	up := newHoldingUpstream()
	h := startRelayTo(t, true, up)
	a, b := budgetChat("budget-a", false), budgetChat("budget-b", false)
	h.budget = &bodyBudget{limit: int64(len(a) + len(b)/2), wait: time.Hour}

	// A is held before the upstream answers: its body counts
	held := up.hold(t, "budget-a", false)
	aDone := serveAsync(h, strings.NewReader(a), len(a))
	await(t, "A to reach the upstream", held.reached)

	bBody := newGateBody(b, false)
	bDone := serveAsync(h, bBody, len(b))
	waitFor(t, "B to wait for the budget", func() bool {
		h.budget.mu.Lock()
		defer h.budget.mu.Unlock()
		return h.budget.freed != nil || bBody.started.Load()
	})
	select {
	case rec := <-bDone:
		t.Fatalf("B did not wait for the budget: %d %s", rec.Code, rec.Body)
	default:
	}
	if bBody.started.Load() {
		t.Fatal("B read its body before the budget had room for it")
	}

	// a body of unknown length is refused as soon as it does not fit
	c := budgetChat("budget-c", false)
	rec := await(t, "C", serveAsync(h, io.MultiReader(strings.NewReader(c)), -1))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"server_busy"`) {
		t.Fatalf("C, unknown length past the budget: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	held.free()
	for _, x := range []struct {
		name string
		done <-chan *httptest.ResponseRecorder
	}{{"A", aDone}, {"B", bDone}} {
		if rec := await(t, x.name, x.done); rec.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", x.name, rec.Code, rec.Body)
		}
	}

	// past the wait, a body of known length is refused
	h.budget.wait = time.Millisecond
	held = up.hold(t, "budget-a", false)
	aDone = serveAsync(h, strings.NewReader(a), len(a))
	await(t, "A again", held.reached)
	rec = await(t, "D", serveAsync(h, strings.NewReader(b), len(b)))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"server_busy"`) {
		t.Fatalf("D, known length past the budget after the wait: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	held.free()
	if rec := await(t, "A again", aDone); rec.Code != http.StatusOK {
		t.Fatalf("A again: %d %s", rec.Code, rec.Body)
	}
}

// TestProvisionedBudgetWaits: the budget a handler is provisioned with
// lets a body of known length wait budgetWait for room (a zero wait would
// refuse it at once, as before).
func TestProvisionedBudgetWaits(t *testing.T) {
	h, _ := startRelay(t, false)
	if got := h.budget.waitLimit(); got != budgetWait {
		t.Fatalf("a provisioned handler's body waits %v for room, want %v", got, budgetWait)
	}
}
