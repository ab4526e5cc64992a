package ledger

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// TestConcurrentTurns runs full turns, reads and generation advances from
// many goroutines (run it with -race) and checks that every acknowledged
// write is there and that batching happened.
func TestConcurrentTurns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	const workers, turns = 8, 10
	var wg sync.WaitGroup
	errc := make(chan error, workers*2)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			sc := testScope(w % 4)
			var plan []PlanBlock
			start := dig("w%d start", w)
			for i := 0; i < turns; i++ {
				gen, err := s.ScopeGeneration(ctx, sc.ID)
				if err != nil {
					errc <- err
					return
				}
				id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: gen, StartDigest: start, Plan: plan})
				if IsReason(err, ReasonStaleGeneration) {
					plan = nil // another worker advanced the generation: start over
					id, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: start})
				}
				if err != nil {
					errc <- fmt.Errorf("worker %d turn %d: CreateIntent: %w", w, i, err)
					return
				}
				end := dig("w%d end %d", w, i)
				res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
					EnvelopeFP: dig("e"), PayloadFP: dig("p %s", end), OutputHash: dig("o %s", end), Replayable: true,
					Payload: []byte(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)), MoveToDelivery: true})
				if err != nil {
					errc <- fmt.Errorf("worker %d turn %d: CommitObservation: %w", w, i, err)
					return
				}
				if err := s.ResolveIntent(ctx, id); err != nil {
					errc <- err
					return
				}
				cands, err := s.Candidates(ctx, sc.ID, end)
				if err != nil {
					errc <- err
					return
				}
				if len(cands) == 1 {
					if _, err := s.Payload(ctx, cands[0].PayloadID); err != nil {
						errc <- err
						return
					}
					plan = append(plan, PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end})
					if len(plan) > 8 {
						plan = nil
					}
				} else {
					plan = nil // generation advanced between commit and read
				}
				start = end
				if i%7 == 6 && w == 0 {
					if _, err := s.AdvanceGenerations(ctx, sc.ID); err != nil {
						errc <- err
						return
					}
				}
			}
		}(w)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	var obs, intents int
	if err := s.db.QueryRow(`SELECT (SELECT count(*) FROM observations), (SELECT count(*) FROM intents)`).Scan(&obs, &intents); err != nil {
		t.Fatal(err)
	}
	if obs != workers*turns || intents != 0 {
		t.Fatalf("observations=%d intents=%d, want %d and 0", obs, intents, workers*turns)
	}
	st := s.Stats()
	t.Logf("writer: %d ops in %d batches, largest %d", st.Ops, st.Batches, st.MaxBatch)
	if st.MaxBatch < 2 {
		t.Errorf("no batching under %d concurrent writers", workers)
	}
}
