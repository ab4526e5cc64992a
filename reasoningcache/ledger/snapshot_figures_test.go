package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSnapshotFigures measures a snapshot of a large ledger while a writer
// keeps committing turns: the copy time, and how many commits went through
// during it with their worst latency, and how long the status
// aggregates take to read. It prints figures and asserts only
// correctness. LEDGER_SNAPSHOT_MB sets the ledger size (off by default).
func TestSnapshotFigures(t *testing.T) {
	mb, _ := strconv.Atoi(os.Getenv("LEDGER_SNAPSHOT_MB"))
	if mb <= 0 {
		t.Skip("set LEDGER_SNAPSHOT_MB to run")
	}
	ctx := context.Background()
	var worst atomic.Int64
	s := openTest(t, "", Options{MaxPayloadBytes: 1 << 20, ObserveBatch: func(_ int, took time.Duration, _ bool) {
		for {
			w := worst.Load()
			if int64(took) <= w || worst.CompareAndSwap(w, int64(took)) {
				return
			}
		}
	}})
	body := strings.Repeat("x", 256<<10)
	for i := range mb * 4 {
		storeTurnPayload(t, s, testScope(i%50), fmt.Sprintf("fill%d", i), `[{"type":"message","text":"`+body+strconv.Itoa(i)+`"}]`)
	}
	agg, err := s.Inspect(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures: inspection of %d observations and %d payloads (%d MiB) took %d ms",
		agg.Observations.Value, agg.Payloads.Value, agg.PayloadBytes.Value>>20, agg.TookMillis)
	worst.Store(0)
	var commits atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			storeTurnPayload(t, s, testScope(1000+i%10), fmt.Sprintf("live%d", i), `[{"type":"message","text":"live"}]`)
			commits.Add(3) // intent, observation, resolve
		}
	}()
	start := time.Now()
	res, err := s.Snapshot(ctx, SnapshotOptions{Dir: filepath.Join(t.TempDir(), "snap"), MaxSourceBytes: int64(mb+64) << 20})
	took := time.Since(start)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figures: snapshot of %d MiB (%d pages, %d steps of 32) took %s; %d ledger commits during it, worst commit %s",
		res.Bytes>>20, res.Pages, res.Steps, took.Round(time.Millisecond), commits.Load(), time.Duration(worst.Load()).Round(time.Microsecond))
}

// storeTurnPayload is storeTurn with a given payload.
func storeTurnPayload(t testing.TB, s *Store, sc Scope, label, payload string) {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s %s", label)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: dig("e %s", label),
		EnvelopeFP: dig("env %s", label), PayloadFP: dig("p %s", label), OutputHash: dig("o %s", label),
		Replayable: true, Payload: []byte(payload), MoveToDelivery: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResolveIntent(ctx, id); err != nil {
		t.Fatal(err)
	}
}
