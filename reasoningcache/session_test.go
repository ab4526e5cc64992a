package reasoningcache

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

func TestNewChecksTheBudget(t *testing.T) {
	st, err := ledger.Open(t.TempDir()+"/c.sqlite", ledger.Options{})
	must(t, err)
	defer st.Close()
	if _, err := New(st, Config{MemoryBudget: 32 << 20}); err == nil {
		t.Fatal("a 32 MiB budget cannot hold 16 MiB scratch + 16 MiB replay ceiling + hot cache")
	}
	cfg := Config{MemoryBudget: 8 << 20, ReplayCeiling: 1 << 20, Limits: canonical.Limits{MaxScratch: 1 << 20}}
	e, err := New(st, cfg)
	must(t, err)
	want := int64(8<<20) - (8<<20)/32 - 2<<20
	if got := e.Stats().Capacity; got != want {
		t.Fatalf("capacity %d, want %d", got, want)
	}
	if HotCacheBytes(0) != 4<<20 || HotCacheBytes(64<<20) != 2<<20 {
		t.Fatalf("HotCacheBytes: %d, %d", HotCacheBytes(0), HotCacheBytes(64<<20))
	}
}

func TestCapacityFallback(t *testing.T) {
	e := newEnv(t, Config{MemoryBudget: 40 << 20})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	first := e.prepare(c)
	if first.Skip() != "" || first.Replayed() != 1 {
		t.Fatalf("first: skip %q replayed %d", first.Skip(), first.Replayed())
	}
	// Leave room for the first session only.
	st := e.eng.Stats()
	hog := e.eng.acquire(st.Capacity - st.BytesUsed - 1)
	if hog == nil {
		t.Fatal("could not take the rest of the budget")
	}
	other := newConv(t, canonical.ShapeChat)
	other.user("another conversation")
	s := e.prepare(other)
	if s.Skip() != "capacity" || s.Dispatched() || s.Replayed() != 0 {
		t.Fatalf("second: skip %q dispatched %v", s.Skip(), s.Dispatched())
	}
	sameInput(t, s.Input(), other.input)
	d, err := canonical.HistoryDigests(e.store.Secret(), other.scope, other.history, canonical.Limits{})
	must(t, err)
	ms, err := e.store.MarkersAt(context.Background(), d.Scope.String(), []string{d.Final().String()})
	must(t, err)
	if len(ms) != 1 || ms[0].Kind != ledger.MarkerStartPoison || ms[0].Reason != "capacity" {
		t.Fatalf("markers %+v, want a capacity start poison", ms)
	}
	must(t, s.Complete(context.Background(), turn{text: "x"}.outcome(0))) // no-op
	s.Delivered(context.Background())
	first.Delivered(context.Background())
	if st := e.eng.Stats(); st.Sessions != 1 || st.BytesUsed != hog.bytes {
		t.Fatalf("after both ended: %+v", st)
	}

	// MaxConcurrent is the other bound.
	e2 := newEnv(t, Config{MaxConcurrent: 1})
	a := e2.prepare(c)
	if b := e2.prepare(other); b.Skip() != "capacity" {
		t.Fatalf("max_concurrent 1: skip %q", b.Skip())
	}
	a.Release(context.Background())

	// When even the marker cannot be written, the relay must answer 503.
	hold := e.prepare(c)
	must(t, e.store.Close())
	_, err = e.eng.Prepare(context.Background(), other.request())
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("closed store: %v, want ErrUnavailable", err)
	}
	hold.Release(context.Background())
	hog.release()
	if st := e.eng.Stats(); st.Sessions != 0 || st.BytesUsed != 0 {
		t.Fatalf("after every session ended: %+v", st)
	}
}

func TestDispatchFailureIsUnavailable(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	must(t, e.store.Close())
	if _, err := e.eng.Prepare(context.Background(), c.request()); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("err %v, want ErrUnavailable", err)
	}
	if st := e.eng.Stats(); st.Sessions != 0 {
		t.Fatalf("a failed Prepare kept a session: %+v", st)
	}
}

func TestRefusalSkipsWithoutTrace(t *testing.T) {
	e := newEnv(t, Config{Limits: canonical.Limits{MaxMessages: 3}})
	c := newConv(t, canonical.ShapeChat)
	for i := range 4 {
		c.user(fmt.Sprint("q", i))
	}
	s := e.prepare(c)
	if s.Skip() != "refused_messages_limit" || s.Dispatched() {
		t.Fatalf("skip %q dispatched %v", s.Skip(), s.Dispatched())
	}
	s.Delivered(context.Background())
	in, err := e.store.UnresolvedIntents(context.Background(), 10)
	must(t, err)
	if len(in) != 0 {
		t.Fatalf("a refusal left %d intents", len(in))
	}
	bad := c.request()
	bad.Spans = bad.Spans[:1]
	if s, err := e.eng.Prepare(context.Background(), bad); err != nil || s.Skip() != "invalid_spans" {
		t.Fatalf("bad spans: %v, %q", err, s.Skip())
	}
}

func TestForgottenSessionReleasesMemory(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	func() {
		for range 3 {
			_ = e.prepare(c) // never ended
		}
	}()
	if st := e.eng.Stats(); st.Sessions != 3 {
		t.Fatalf("sessions %d, want 3", st.Sessions)
	}
	deadline := time.Now().Add(10 * time.Second)
	for e.eng.Stats().Sessions != 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if st := e.eng.Stats(); st.Sessions != 0 || st.BytesUsed != 0 {
		t.Fatalf("forgotten sessions still hold %+v", st)
	}
	// Their intents are left for Sweep.
	e.clk.Add(16 * time.Minute)
	must(t, e.eng.Sweep(context.Background()))
	in, err := e.store.UnresolvedIntents(context.Background(), 10)
	must(t, err)
	if len(in) != 0 {
		t.Fatalf("%d intents survived the sweep", len(in))
	}
}

// TestSweepLeavesLiveGenerations: the sweep works on the wall clock, so it
// takes only orphaned intents; a live session's generation is left to its
// monotonic inactivity timer, and a forward clock jump (or a healthy
// stream longer than the timeout) does not poison it.
func TestSweepLeavesLiveGenerations(t *testing.T) {
	e := newEnv(t, Config{IntentTimeout: time.Minute})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s := e.prepare(c)
	e.clk.Add(time.Hour)
	must(t, e.eng.Sweep(context.Background()))
	if in, _ := e.store.UnresolvedIntents(context.Background(), 10); len(in) != 1 {
		t.Fatal("the sweep expired a live generation after a clock jump")
	}
	must(t, s.Complete(context.Background(), mixedTurns[0].outcome(0)))
	s.Delivered(context.Background())
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	s = e.prepare(c)
	defer s.Release(context.Background())
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d, want 1", s.Replayed())
	}
}

// TestInactivityTimer drives the watch's timer callback by hand: a stale
// callback (an earlier revision) is ignored, a callback after recent
// progress re-arms, and one after IntentTimeout without progress
// poisons the position; the late completion is then harmless.
func TestInactivityTimer(t *testing.T) {
	e := newEnv(t, Config{IntentTimeout: time.Hour})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s := e.prepare(c)
	w := s.watch
	unresolved := func() int {
		in, err := e.store.UnresolvedIntents(context.Background(), 10)
		must(t, err)
		return len(in)
	}
	w.mu.Lock()
	rev := w.rev
	w.mu.Unlock()
	s.Progress()
	w.fire(rev - 1) // stale
	w.fire(rev)     // current, but there was progress just now: re-arms
	if unresolved() != 1 {
		t.Fatal("the timer expired a generation that made progress")
	}
	w.mu.Lock()
	w.last = time.Now().Add(-2 * time.Hour) // no progress for the timeout
	rev = w.rev
	w.mu.Unlock()
	w.fire(rev - 1) // stale again
	if unresolved() != 1 {
		t.Fatal("a stale timer callback expired the generation")
	}
	w.fire(rev)
	if unresolved() != 0 {
		t.Fatal("an inactive generation survived its timer")
	}
	must(t, s.Complete(context.Background(), turn{text: "late"}.outcome(0)))
	s.Delivered(context.Background())
	ms, err := e.store.MarkersAt(context.Background(), s.scope.ID, []string{s.start})
	must(t, err)
	if len(ms) != 1 || ms[0].Reason != "generation_timeout" {
		t.Fatalf("markers %+v", ms)
	}
}

// TestPersistedDeadlineIsCoalesced: progress renews the intent's persisted
// deadline metadata at most once per min(5 s, timeout/4).
func TestPersistedDeadlineIsCoalesced(t *testing.T) {
	if got := persistEvery(8 * time.Second); got != 2*time.Second {
		t.Fatalf("persistEvery(8s) = %v", got)
	}
	if got := persistEvery(time.Hour); got != 5*time.Second {
		t.Fatalf("persistEvery(1h) = %v", got)
	}
	e := newEnv(t, Config{IntentTimeout: time.Hour})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s := e.prepare(c)
	defer s.Release(context.Background())
	deadline := func() time.Time {
		in, err := e.store.UnresolvedIntents(context.Background(), 10)
		must(t, err)
		if len(in) != 1 {
			t.Fatalf("%d intents", len(in))
		}
		return in[0].Deadline
	}
	first := deadline()
	e.clk.Add(time.Minute)
	for range 100 {
		s.Progress()
	}
	if !deadline().Equal(first) {
		t.Fatal("the persisted deadline was renewed within the coalescing window")
	}
	s.watch.mu.Lock()
	s.watch.persisted = time.Now().Add(-6 * time.Second)
	s.watch.mu.Unlock()
	s.Progress()
	for range 100 {
		s.Progress()
	}
	limit := time.Now().Add(10 * time.Second)
	for deadline().Equal(first) && time.Now().Before(limit) {
		time.Sleep(5 * time.Millisecond) // the update runs off the caller's path
	}
	if want := e.clk.Now().Add(time.Hour); !deadline().Equal(want.Truncate(time.Millisecond)) {
		t.Fatalf("deadline %v, want %v", deadline(), want)
	}
}

func TestDropReplay(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	e.runTurn(c, 0, mixedTurns[0])
	c.assistant(0, mixedTurns[0])
	c.user("q2")
	s := e.prepare(c)
	if s.Replayed() != 1 {
		t.Fatalf("replayed %d", s.Replayed())
	}
	in, err := s.DropReplay(context.Background())
	must(t, err)
	sameInput(t, in, c.input)
	if s.Replayed() != 0 || !s.Dispatched() {
		t.Fatalf("after drop: replayed %d dispatched %v", s.Replayed(), s.Dispatched())
	}
	must(t, s.Complete(context.Background(), mixedTurns[1].outcome(1)))
	s.Delivered(context.Background())
	// The rejected record is never proposed again.
	s = e.prepare(c)
	if s.Replayed() != 0 {
		t.Fatalf("replayed a rejected record")
	}
	s.Release(context.Background())
}

func TestPromptCacheKey(t *testing.T) {
	e := newEnv(t, Config{})
	key := func(c *conv) string {
		r := c.request()
		r.PromptCacheKey = true
		s, err := e.eng.Prepare(context.Background(), r)
		must(t, err)
		defer s.Release(context.Background())
		return s.PromptCacheKey()
	}
	c := newConv(t, canonical.ShapeChat)
	c.user("first question")
	k1 := key(c)
	c.assistant(0, mixedTurns[0])
	c.user("second question")
	if k2 := key(c); k2 != k1 || len(k1) != 64 || strings.Trim(k1, "0123456789abcdef") != "" {
		t.Fatalf("keys %q then %q: want one stable 64-hex key", k1, k2)
	}
	d := newConv(t, canonical.ShapeChat)
	d.user("another first question")
	if key(d) == k1 {
		t.Fatal("two conversations share a key")
	}
	o := newConv(t, canonical.ShapeChat)
	o.user("first question")
	o.scope.RelayToken = "relay-token-2"
	if key(o) == k1 {
		t.Fatal("two scopes share a key")
	}
	if s := e.prepare(c); s.PromptCacheKey() != "" {
		t.Fatal("a key nobody asked for")
	}
}

func TestConcurrentSessions(t *testing.T) {
	e := newEnv(t, Config{MaxConcurrent: 64, EntryAllowance: 1 << 20})
	const convs, turns = 12, 4
	var wg sync.WaitGroup
	errs := make(chan error, convs)
	for i := range convs {
		wg.Go(func() {
			c := newConv(t, canonical.ShapeChat)
			if i%2 == 1 {
				c = newConv(t, canonical.ShapeResponses)
			}
			c.scope.Caller = fmt.Sprint("caller-", i%3)
			for k := range turns {
				c.user(fmt.Sprintf("conversation %d question %d", i, k))
				s, err := e.eng.Prepare(context.Background(), c.request())
				if err != nil {
					errs <- err
					return
				}
				// Every earlier block of this conversation, and only those,
				// byte for byte.
				all := make([]int, k)
				for b := range k {
					all[b] = b
				}
				if err := equalInput(s.Input(), c.want(all...)); err != nil || s.Replayed() != k {
					errs <- fmt.Errorf("conversation %d turn %d: replayed %d: %v", i, k, s.Replayed(), err)
				}
				tu := turn{text: fmt.Sprintf("answer %d.%d", i, k), seed: fmt.Sprint(i)}
				if err := s.Complete(context.Background(), tu.outcome(k)); err != nil {
					errs <- err
				}
				s.Delivered(context.Background())
				c.assistant(k, tu)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := e.eng.Stats(); st.Sessions != 0 || st.BytesUsed != 0 {
		t.Fatalf("sessions left: %+v", st)
	}
}

func equalInput(got, want []json.RawMessage) error {
	if len(got) != len(want) {
		return fmt.Errorf("%d items, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			return fmt.Errorf("item %d differs", i)
		}
	}
	return nil
}

// TestPreparationsShareOneWorkspace: the canonical scratch and plan loads
// are reserved once in the budget, so a preparation waits while another
// holds the workspace (and gives up with its context).
func TestPreparationsShareOneWorkspace(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	must(t, e.eng.enterWorkspace(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.eng.Prepare(ctx, c.request())
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a preparation ran while another held the workspace: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting preparation: %v, want context.Canceled", err)
	}
	e.eng.leaveWorkspace()
	s := e.prepare(c)
	s.Release(context.Background())
	if st := e.eng.Stats(); st.Sessions != 0 {
		t.Fatalf("stats %+v after the sessions ended", st)
	}
}
