package reasoningcache

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// TestCapacityEightLongConversations: under the default budget, eight
// concurrent 2 MB conversations that replay ten earlier turns each are all
// admitted with their replay and their record, because a session is
// charged what its request holds (history, input, replay, record), not
// the worst case (2 × entry_allowance up front: only seven fitted).
func TestCapacityEightLongConversations(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eight 2 MB conversations")
	}
	e := newEnv(t, Config{})
	const n = 8
	reqs := make([]Request, n)
	for k := range reqs {
		sc := testScope(canonical.ShapeChat)
		sc.Caller = fmt.Sprintf("client-%d", k)
		reqs[k] = cycleConvIn(t, e, sc, 2<<20).request()
	}
	ctx := context.Background()
	sessions := make([]*Session, n)
	for k := range sessions {
		s, err := e.eng.Prepare(ctx, reqs[k])
		must(t, err)
		sessions[k] = s
	}
	admitted := 0
	for k, s := range sessions {
		out := streamedOutcome(k)
		if s.Skip() == "" && s.Replayed() == cycleTurns && s.GrowRecord(arrayLen(out.Output)+arrayLen(out.DoneItems)) {
			admitted++
		}
	}
	st := e.eng.Stats()
	t.Logf("8 concurrent 2 MB conversations: %d admitted with replay and record; %d of %d bytes charged",
		admitted, st.BytesUsed, st.Capacity)
	for k, s := range sessions {
		must(t, s.Complete(ctx, streamedOutcome(k)))
		s.Delivered(ctx)
	}
	if admitted != n {
		t.Fatalf("%d of %d admitted", admitted, n)
	}
	if st := e.eng.Stats(); st.Sessions != 0 || st.BytesUsed != 0 {
		t.Fatalf("after every session ended: %+v", st)
	}
}

// TestCapacityBound: whatever sessions, replays and recordings run at once,
// the bytes charged never exceed the capacity nor the sessions
// max_concurrent, and everything is returned at the end. A recording the
// budget refused ends as documented: its position is poisoned
// (record_over_budget), so that output is never replayed.
func TestCapacityBound(t *testing.T) {
	// capacity 8 MiB - 256 KiB hot cache - 1 MiB scratch - 1 MiB ceiling
	e := newEnv(t, Config{MemoryBudget: 8 << 20, ReplayCeiling: 1 << 20, MaxConcurrent: 6,
		Limits: canonical.Limits{MaxScratch: 1 << 20}})
	capacity := e.eng.Stats().Capacity
	var over atomic.Value
	stop := make(chan struct{})
	var watcher sync.WaitGroup
	watcher.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if st := e.eng.Stats(); st.BytesUsed > st.Capacity || st.BytesUsed < 0 || st.Sessions > 6 {
				over.Store(st)
			}
		}
	})
	var refused, poisoned atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16*6*3)
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			c := newConv(t, canonical.ShapeChat)
			c.scope.Caller = fmt.Sprint("caller-", g)
			for k := range 6 {
				c.user(fmt.Sprintf("conversation %d question %d %s", g, k, make([]byte, rng.IntN(64<<10))))
				s, err := e.eng.Prepare(context.Background(), c.request())
				if err != nil {
					errs <- err
					return
				}
				tu := turn{text: fmt.Sprintf("answer %d.%d", g, k), seed: fmt.Sprint(g)}
				out := tu.outcome(k)
				if !s.Dispatched() {
					// no session for it (capacity): relayed without the cache
					s.Release(context.Background())
					c.assistant(k, tu)
					continue
				}
				// a recording of up to 3 MiB, in stream-sized steps
				kept := true
				for left := rng.Int64N(3 << 20); left > 0 && kept; left -= 16 << 10 {
					kept = s.GrowRecord(min(left, 16<<10))
				}
				if !kept {
					refused.Add(1)
				}
				if err := s.Complete(context.Background(), out); err != nil {
					errs <- err
				}
				if !kept && s.Dispatched() {
					errs <- fmt.Errorf("conversation %d turn %d: a refused record left its intent clean", g, k)
				}
				if !kept {
					ms, err := e.store.Markers(context.Background(), s.scope.ID, s.start)
					if err != nil || len(ms) == 0 || ms[0].Kind != ledger.MarkerStartPoison {
						errs <- fmt.Errorf("conversation %d turn %d: refused record, markers %+v %v", g, k, ms, err)
					} else {
						poisoned.Add(1)
					}
				}
				s.Delivered(context.Background())
				c.assistant(k, tu)
			}
		})
	}
	wg.Wait()
	close(stop)
	watcher.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st, ok := over.Load().(Stats); ok {
		t.Fatalf("charged beyond the budget: %+v (capacity %d)", st, capacity)
	}
	if st := e.eng.Stats(); st.Sessions != 0 || st.BytesUsed != 0 {
		t.Fatalf("after every session ended: %+v", st)
	}
	t.Logf("%d recordings refused by the budget, %d positions poisoned", refused.Load(), poisoned.Load())
}

// TestRecordRefusedPoisons: a session that got its request's charge but
// cannot grow it for the recording poisons its position at Complete, both
// when the adapter asked GrowRecord (stream) and when Complete itself
// charges the output (JSON body), even if the outcome looks complete.
func TestRecordRefusedPoisons(t *testing.T) {
	for _, stream := range []bool{true, false} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			e := newEnv(t, Config{})
			c := e.firstTurn(mixedTurns[0])
			s, logs := e.logged(c)
			st := e.eng.Stats()
			hog := e.eng.acquire(st.Capacity - st.BytesUsed)
			if hog == nil {
				t.Fatal("could not take the rest of the budget")
			}
			defer hog.release()
			if stream && s.GrowRecord(1) {
				t.Fatal("GrowRecord beyond the budget succeeded")
			}
			must(t, s.Complete(context.Background(), mixedTurns[1].outcome(1)))
			s.Delivered(context.Background())
			e.wantPoisoned(t, s, logs, "record_over_budget")
		})
	}
}

// TestGrowRecordPassThrough: a session without the cache recordings
// nothing and charges nothing.
func TestGrowRecordPassThrough(t *testing.T) {
	e := newEnv(t, Config{Limits: canonical.Limits{MaxMessages: 1}})
	c := newConv(t, canonical.ShapeChat)
	c.user("q1")
	s := e.prepare(c)
	if s.Skip() == "" || s.GrowRecord(1) {
		t.Fatalf("skip %q: a pass-through session took a recording", s.Skip())
	}
	s.Release(context.Background())
}
