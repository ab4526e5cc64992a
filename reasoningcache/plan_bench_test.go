package reasoningcache

import (
	"context"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/ledger"
)

// BenchmarkPlan measures the planner of one replay hit as a hit sees it:
// every iteration first runs a full cycle (Prepare, Complete, Delivered:
// three commits, which also invalidate every read connection's page
// cache, as the previous turn's commits do), untimed, and then times
// Engine.plan for the conversation's request, which replays ten turns.
// plan-us is the planner's time per hit; the reads' share of it is in
// BenchmarkPlanReads.
func BenchmarkPlan(b *testing.B) {
	for _, sz := range cycleSizes[:2] {
		b.Run(sz.name, func(b *testing.B) {
			e, c, d, sc := planBenchSetup(b, sz.bytes)
			ctx := context.Background()
			req := c.request()
			var took time.Duration
			i := 0
			for b.Loop() {
				b.StopTimer()
				planBenchCycle(b, e, &req, i)
				b.StartTimer()
				t0 := time.Now()
				p, why := e.eng.plan(ctx, sc, d, &req)
				took += time.Since(t0)
				if len(p.blocks) != cycleTurns {
					b.Fatalf("planned %d blocks, want %d (%s)", len(p.blocks), cycleTurns, why)
				}
				i++
			}
			b.ReportMetric(took.Seconds()*1e6/float64(max(1, i)), "plan-us")
		})
	}
}

// BenchmarkPlanReads times each ledger read of one plan separately, after
// the same untimed full cycle as BenchmarkPlan, with the arguments the
// planner passes: the per-read breakdown of a hit's planning. The SQL
// reads the planner made before the plan memo come first (scope,
// candidates with the linked-plan walk, observations, markers, intents,
// payloads, snapshots), then what it reads now (new-*: PlanState, and
// PlanCandidate, PlanObservations and PlanPayloads through the memo).
func BenchmarkPlanReads(b *testing.B) {
	for _, sz := range cycleSizes[:2] {
		b.Run(sz.name, func(b *testing.B) {
			e, c, d, sc := planBenchSetup(b, sz.bytes)
			ctx := context.Background()
			req := c.request()
			p, why := e.eng.plan(ctx, sc, d, &req)
			if len(p.blocks) != cycleTurns {
				b.Fatalf("planned %d blocks, want %d (%s)", len(p.blocks), cycleTurns, why)
			}
			var obsIDs, payIDs []int64
			for _, bl := range p.blocks {
				obsIDs, payIDs = append(obsIDs, bl.ObservationID), append(payIDs, bl.PayloadID)
			}
			rows, err := e.store.Observations(ctx, sc.ID, obsIDs)
			must(b, err)
			var digests, starts []string
			for _, o := range rows {
				digests, starts = append(digests, o.StartDigest, o.EndDigest), append(starts, o.StartDigest)
			}
			end := d.Turns[len(d.Turns)-1].EndDigest.String()
			var turnDigests, turnStarts []string
			for _, t := range d.Turns {
				turnDigests = append(turnDigests, t.StartDigest.String(), t.EndDigest.String())
				turnStarts = append(turnStarts, t.StartDigest.String())
			}
			reads := []struct {
				name string
				run  func() error
			}{
				{"scope", func() error { _, _, err := e.store.ScopeState(ctx, sc.ID); return err }},
				{"candidates", func() error { _, err := e.store.Candidates(ctx, sc.ID, end); return err }},
				{"observations", func() error { _, err := e.store.Observations(ctx, sc.ID, obsIDs); return err }},
				{"markers", func() error { _, err := e.store.MarkersAt(ctx, sc.ID, digests); return err }},
				{"intents", func() error { _, err := e.store.IntentsAt(ctx, sc.ID, starts); return err }},
				{"payloads", func() error {
					set, err := e.store.Payloads(ctx, payIDs)
					if err != nil {
						return err
					}
					for _, id := range payIDs {
						if _, err := set.Payload(ctx, id); err != nil {
							return err
						}
					}
					return nil
				}},
				{"snapshots", func() error { _, err := e.store.ModelSnapshots(ctx, sc.ID); return err }},
				// what the planner reads now
				{"new-state", func() error {
					_, err := e.store.PlanState(ctx, sc.ID, end, turnDigests, turnStarts, maxCandidates)
					return err
				}},
				{"new-candidate", func() error {
					_, err := e.store.PlanCandidate(ctx, p.blocks[len(p.blocks)-1].ObservationID)
					return err
				}},
				{"new-observations", func() error { _, err := e.store.PlanObservations(ctx, sc.ID, obsIDs); return err }},
				{"new-payloads", func() error {
					set, err := e.store.PlanPayloads(ctx, payIDs)
					if err != nil {
						return err
					}
					for _, id := range payIDs {
						if _, err := set.Payload(ctx, id); err != nil {
							return err
						}
					}
					return nil
				}},
			}
			// The first read after a commit pays for the reset page cache,
			// so the groups take turns going first, and a group's times
			// count only when it went first, as in a plan.
			const old = 7 // reads[:old] are the former planner's
			took := make([]time.Duration, len(reads))
			i := 0
			for b.Loop() {
				b.StopTimer()
				planBenchCycle(b, e, &req, i)
				b.StartTimer()
				first, second := reads[:old], reads[old:]
				base := 0
				if i%2 == 1 {
					first, second, base = second, first, old
				}
				for k, r := range first {
					t0 := time.Now()
					must(b, r.run())
					took[base+k] += time.Since(t0)
				}
				for _, r := range second {
					must(b, r.run())
				}
				i++
			}
			for k, r := range reads {
				b.ReportMetric(took[k].Seconds()*1e6/float64(max(1, i/2)), r.name+"-us")
			}
		})
	}
}

// planBenchSetup records a cycle conversation of about size bytes and
// returns its digests and ledger scope, as Prepare computes them.
func planBenchSetup(b *testing.B, size int) (*env, *conv, *canonical.Digests, ledger.Scope) {
	b.Helper()
	e := newEnv(b, Config{})
	c := cycleConv(b, e, size)
	req := c.request()
	d, err := canonical.HistoryDigests(e.eng.secret, req.Scope, req.History, e.eng.cfg.Limits)
	must(b, err)
	sc := ledger.Scope{ID: d.Scope.String(), Model: req.Scope.Model, Caller: e.eng.callerFP(req.Scope.Caller)}
	return e, c, d, sc
}

// planBenchCycle runs one full replay cycle of req (its commits are what
// a hit's planner reads after).
func planBenchCycle(b *testing.B, e *env, req *Request, i int) {
	ctx := context.Background()
	s, err := e.eng.Prepare(ctx, *req)
	must(b, err)
	if s.Replayed() != cycleTurns {
		b.Fatalf("replayed %d, want %d (skip %q)", s.Replayed(), cycleTurns, s.Skip())
	}
	must(b, s.Complete(ctx, streamedOutcome(i)))
	s.Delivered(ctx)
}
