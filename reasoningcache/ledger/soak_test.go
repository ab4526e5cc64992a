package ledger

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Soaks print figures; they assert only correctness, never timing. Run by
// hand:
//
//	LEDGER_SOAK=wal LEDGER_SOAK_SECONDS=20 go test ./reasoningcache/ledger -run TestSoakWAL -v
//	LEDGER_SOAK=retention LEDGER_SOAK_TURNS=6000 go test ./reasoningcache/ledger -run TestSoakRetention -v

func soakEnabled(t *testing.T, kind string) {
	if os.Getenv("LEDGER_SOAK") != kind {
		t.Skipf("set LEDGER_SOAK=%s to run this soak", kind)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// TestSoakWAL runs writers and readers flat out against a store with its
// real maintenance loop and samples the WAL size every 100 ms; then the
// same load against PASSIVE checkpoints every 5 s, as the relay ran before.
func TestSoakWAL(t *testing.T) {
	soakEnabled(t, "wal")
	secs := envInt("LEDGER_SOAK_SECONDS", 20)
	run := func(name string, opts Options, passiveEvery time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
		defer cancel()
		s := openTest(t, "", opts)
		var turns atomic.Int64
		var wg sync.WaitGroup
		for w := 0; w < 8; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				sc := testScope(w)
				for i := 0; ctx.Err() == nil; i++ {
					bigTurn(t, s, sc, w*1_000_000+i, 8<<10)
					// a reader per turn, as the planner does
					if _, err := s.Candidates(context.Background(), sc.ID, dig("end %d", w*1_000_000+i)); err != nil {
						t.Error(err)
						return
					}
					turns.Add(1)
				}
			}(w)
		}
		if passiveEvery > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tk := time.NewTicker(passiveEvery)
				defer tk.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						_, _, _ = s.Checkpoint(context.Background())
					}
				}
			}()
		}
		var samples []int64
		tk := time.NewTicker(100 * time.Millisecond)
	sample:
		for {
			select {
			case <-ctx.Done():
				break sample
			case <-tk.C:
				samples = append(samples, fileSize(s.path+"-wal"))
			}
		}
		tk.Stop()
		wg.Wait()
		lc, _ := s.Lifecycle(context.Background())
		slices.Sort(samples)
		mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
		fmt.Printf("soak %-28s %6d turns in %ds (%4.0f/s): WAL p50 %s, p99 %s, max %s; database %s; %d truncations, longest writer pause %s\n",
			name, turns.Load(), secs, float64(turns.Load())/float64(secs),
			mib(samples[len(samples)/2]), mib(samples[len(samples)*99/100]), mib(samples[len(samples)-1]), mib(fileSize(s.path)),
			lc.WALTruncations, lc.WALStallMax.Round(time.Millisecond))
	}
	run("maintenance (64 MiB limit)", Options{}, 0)
	run("maintenance (16 MiB limit)", Options{WALLimit: 16 << 20}, 0)
	run("PASSIVE every 5 s (before)", Options{manualMaintenance: true, walUnbounded: true}, 5*time.Second)
}

// TestSoakRetention drives N turns through a store whose clock advances
// 20 minutes per turn (the configured 30-day retention then passes
// quickly), running cleanup every simulated hour as maintenance does, and
// prints the database's size as it levels off.
func TestSoakRetention(t *testing.T) {
	soakEnabled(t, "retention")
	turns := envInt("LEDGER_SOAK_TURNS", 6000)
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	sc := testScope(1)
	var plan []PlanBlock
	lastCleanup := clk.Monotonic()
	deleted := 0
	for i := 0; i < turns; i++ {
		// a conversation of 20 turns, then a new one
		if i%20 == 0 {
			plan = nil
		}
		start := dig("start %d", i)
		st := storeTurnSized(t, s, sc, start, dig("end %d", i), plan, 4<<10)
		plan = append(plan, st)
		clk.advance(s, 20*time.Minute)
		if clk.Monotonic()-lastCleanup >= time.Hour {
			lastCleanup = clk.Monotonic()
			res := mustCleanup(t, s)
			deleted += res.Deleted
		}
		if (i+1)%500 == 0 {
			if err := s.maintainWAL(ctx); err != nil {
				t.Fatal(err)
			}
			var payloads, pages, free, obs int64
			_ = s.db.QueryRow(`SELECT (SELECT count(*) FROM payloads), (SELECT page_count FROM pragma_page_count),
				(SELECT freelist_count FROM pragma_freelist_count), (SELECT count(*) FROM observations)`).Scan(&payloads, &pages, &free, &obs)
			fmt.Printf("soak retention: %5d turns, day %5.1f: %5d payloads (%d deleted), %5d observations, database file %6.1f MiB (%5.1f MiB in use), WAL %5.1f MiB\n",
				i+1, float64(i+1)*20/60/24, payloads, deleted, obs, float64(fileSize(s.path))/(1<<20),
				float64((pages-free)*4096)/(1<<20), float64(fileSize(s.path+"-wal"))/(1<<20))
		}
	}
	var bad int
	_ = s.db.QueryRow(`SELECT count(*) FROM observations c JOIN dependencies d ON d.observation_id = c.observation_id AND d.kind = 'ancestry'
		JOIN observations a ON a.observation_id = d.ancestor_id WHERE c.payload_id IS NOT NULL AND a.payload_id IS NULL`).Scan(&bad)
	if bad != 0 {
		t.Fatalf("%d retained observations lost an ancestor's payload", bad)
	}
	var ok string
	_ = s.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok)
	if ok != "ok" {
		t.Fatalf("integrity_check: %s", ok)
	}
}

// storeTurnSized is storeTurn with a payload of n bytes.
func storeTurnSized(t testing.TB, s *Store, sc Scope, start, end string, plan []PlanBlock, n int) PlanBlock {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: start, Plan: plan})
	if err != nil {
		t.Fatalf("CreateIntent: %v", err)
	}
	body := make([]byte, n)
	for i := range body {
		body[i] = 'a' + byte(i%26)
	}
	res, err := s.CommitObservation(ctx, CommitObservationRequest{
		IntentID: id, EndDigest: end, EnvelopeFP: dig("env %s", end), PayloadFP: dig("payload %s", end),
		OutputHash: dig("out %s", end), Replayable: true, Payload: []byte(`"` + string(body) + end + `"`), MoveToDelivery: true,
	})
	if err != nil {
		t.Fatalf("CommitObservation: %v", err)
	}
	if err := s.ResolveIntent(ctx, id); err != nil {
		t.Fatalf("ResolveIntent: %v", err)
	}
	return PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end}
}
