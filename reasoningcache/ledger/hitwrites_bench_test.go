package ledger

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkHitWrites measures the ledger writes of one replay hit the way
// the relay makes them at concurrency 1: the intent (a plan of ten blocks
// with payloads of a few KB, revalidated, pinned and touched), the
// observation (moved to delivery in the same commit) and the queued
// resolve, whose commit the next request does not wait for. "new" commits
// a new observation and payload per hit, as a conversation's next turn
// does; "repeat" observes the same output again, as the load harness
// does when it resends one request. gap is the time between a response
// and the next request's intent (the client's round trip, parsing and the
// plan reads). It reports the latency of the two commits a request waits
// for, the writer's busy time per hit (all its transactions, fsyncs
// included) and the process's CPU time per hit (mostly the writer's; it
// varies less than wall times on a shared machine).
func BenchmarkHitWrites(b *testing.B) {
	for _, kind := range []string{"new", "repeat"} {
		for _, gap := range []time.Duration{0, time.Millisecond} {
			b.Run(fmt.Sprintf("%s/gap=%s", kind, gap), func(b *testing.B) {
				benchHitWrites(b, kind == "repeat", gap)
			})
		}
	}
}

func benchHitWrites(b *testing.B, repeat bool, gap time.Duration) {
	var busy atomic.Int64
	s := openTest(b, "", Options{ObserveBatch: func(_ int, d time.Duration, _ bool) { busy.Add(int64(d)) }})
	ctx := context.Background()
	sc := testScope(7)
	payload := []byte(`[{"type":"reasoning","encrypted_content":"` + strings.Repeat("gAAAAABpQ3xY", 512) + `"}]`)
	var plan []PlanBlock
	for k := range 10 {
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("start %d", k), Plan: plan})
		if err != nil {
			b.Fatal(err)
		}
		end := dig("end %d", k)
		res, err := s.CommitObservation(ctx, CommitObservationRequest{
			IntentID: id, EndDigest: end, EnvelopeFP: dig("env %d", k), PayloadFP: dig("payload %d", k),
			OutputHash: dig("out %d", k), Replayable: true, Payload: payload, MoveToDelivery: true, ModelSnapshot: "gpt-test-1",
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.ResolveIntent(ctx, id); err != nil {
			b.Fatal(err)
		}
		plan = append(plan, PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end})
	}
	var intent, observe time.Duration
	var waits []func() error
	busy.Store(0)
	before := s.Stats().Batches
	cpu0 := processCPU()
	i := 0
	for b.Loop() {
		t0 := time.Now()
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("start 10"), Plan: plan})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		n := i
		if repeat {
			n = 0
		}
		end := dig("next end %d", n)
		res, err := s.CommitObservation(ctx, CommitObservationRequest{
			IntentID: id, EndDigest: end, EnvelopeFP: dig("next env %d", n), PayloadFP: dig("next payload %d", n),
			OutputHash: dig("next out %d", n), Replayable: true, Payload: payload, MoveToDelivery: true, ModelSnapshot: "gpt-test-1",
		})
		if err != nil {
			b.Fatal(err)
		}
		if want := OutcomeStored; repeat && i > 0 && res.Outcome != OutcomeRepeat || !repeat && res.Outcome != want {
			b.Fatalf("outcome %s", res.Outcome)
		}
		t2 := time.Now()
		waits = append(waits, s.ResolveIntentQueued(ctx, id))
		intent, observe = intent+t1.Sub(t0), observe+t2.Sub(t1)
		if gap > 0 {
			time.Sleep(gap)
		}
		i++
	}
	for _, w := range waits {
		if err := w(); err != nil {
			b.Fatal(err)
		}
	}
	cpu := processCPU() - cpu0
	n := float64(max(1, i))
	b.ReportMetric(cpu.Seconds()*1e3/n, "cpu-ms/hit")
	b.ReportMetric(intent.Seconds()*1e3/n, "intent-ms")
	b.ReportMetric(observe.Seconds()*1e3/n, "observe-ms")
	b.ReportMetric(time.Duration(busy.Load()).Seconds()*1e3/n, "writer-ms/hit")
	b.ReportMetric(float64(s.Stats().Batches-before)/n, "commits/hit")
}
