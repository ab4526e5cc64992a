package ledger

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// bigTurn stores one turn with a payload of n bytes.
func bigTurn(t testing.TB, s *Store, sc Scope, i, n int) {
	t.Helper()
	ctx := context.Background()
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("start %d", i)})
	if err != nil {
		t.Fatal(err)
	}
	end := dig("end %d", i)
	if _, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
		EnvelopeFP: dig("env %d", i), PayloadFP: dig("payload %d", i), OutputHash: dig("out %d", i), Replayable: true,
		Payload: []byte(`"` + strings.Repeat("x", n) + fmt.Sprint(i) + `"`), MoveToDelivery: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.ResolveIntent(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// TestWALBoundedWhileWriting: under continuous writes (the writer never
// idle) the WAL file is at most WALLimit shortly after each maintenance
// tick, with no checkpoint on any commit. PASSIVE checkpoints alone, which
// is all the relay used to run, leave the file at its high-water mark.
func TestWALBoundedWhileWriting(t *testing.T) {
	ctx := context.Background()
	const limit = 1 << 20
	old := walIdle
	walIdle = time.Hour // never idle: only the size limit applies
	defer func() { walIdle = old }()

	s := openTest(t, "", Options{manualMaintenance: true, WALLimit: limit, ReserveBytes: MinReserveBytes})
	for i := 0; i < 300; i++ {
		bigTurn(t, s, testScope(1), i, 16<<10)
		if i%20 == 19 {
			if err := s.maintainWAL(ctx); err != nil {
				t.Fatal(err)
			}
			// over the limit, the writer truncates between two batches
			bigTurn(t, s, testScope(2), i, 1)
			if got := fileSize(s.path + "-wal"); got > limit {
				t.Fatalf("after turn %d the WAL is %d bytes, limit %d", i, got, limit)
			}
		}
	}
	if s.life.walTruncs.Load() == 0 {
		t.Fatal("maintenance never truncated the WAL")
	}

	// The old behaviour, PASSIVE checkpoints only.
	p := openTest(t, "", Options{manualMaintenance: true, WALLimit: limit, ReserveBytes: MinReserveBytes})
	for i := 0; i < 300; i++ {
		bigTurn(t, p, testScope(1), i, 16<<10)
		if i%20 == 19 {
			if _, _, err := p.Checkpoint(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got := fileSize(p.path + "-wal"); got <= limit {
		t.Logf("PASSIVE checkpoints alone left the WAL at %d bytes", got)
	} else {
		t.Logf("PASSIVE checkpoints alone: WAL at %d bytes, over the %d limit", got, limit)
	}
}

// TestWALTruncatedWhenIdle: once the writer is idle the WAL goes to zero.
func TestWALTruncatedWhenIdle(t *testing.T) {
	old := walIdle
	walIdle = 0
	defer func() { walIdle = old }()
	s := openTest(t, "", Options{manualMaintenance: true, ReserveBytes: MinReserveBytes})
	for i := 0; i < 20; i++ {
		bigTurn(t, s, testScope(1), i, 4<<10)
	}
	if fileSize(s.path+"-wal") == 0 {
		t.Fatal("no WAL to truncate")
	}
	if err := s.maintainWAL(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := fileSize(s.path + "-wal"); got != 0 {
		t.Fatalf("idle WAL is %d bytes after maintenance", got)
	}
	lc, err := s.Lifecycle(context.Background())
	if err != nil || lc.WALTruncations == 0 || lc.WALMaxBytes == 0 {
		t.Fatalf("lifecycle: %+v, %v", lc, err)
	}
}
