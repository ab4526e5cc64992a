package ledger

import (
	"context"
	"testing"
	"time"
)

// TestSnapshotSightingsAreCoarse: an observation rewrites its model
// snapshot's sighting unless the snapshot is already the scope's latest
// and was seen within SnapshotSeenGranularity; the order of snapshots
// always follows the observations.
func TestSnapshotSightingsAreCoarse(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	s := openClocked(t, clk, Options{})
	sc := testScope(1)
	n := 0
	observe := func(snap string) {
		t.Helper()
		n++
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s%d", n)})
		if err != nil {
			t.Fatal(err)
		}
		end := dig("e%d", n)
		if _, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
			EnvelopeFP: dig("env%d", n), PayloadFP: dig("p%d", n), OutputHash: dig("o%d", n),
			Replayable: true, Payload: []byte(`[]`), ModelSnapshot: snap, MoveToDelivery: true}); err != nil {
			t.Fatal(err)
		}
		if err := s.ResolveIntent(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	sighting := func(snap string) (seen time.Time, seq int64) {
		t.Helper()
		var ms int64
		if err := s.db.QueryRow(`SELECT last_seen_at, last_seq FROM scope_snapshots WHERE scope_id = ? AND snapshot = ?`,
			sc.ID, snap).Scan(&ms, &seq); err != nil {
			t.Fatal(err)
		}
		return time.UnixMilli(ms), seq
	}
	observe("m-1")
	first, seq := sighting("m-1")
	clk.advance(s, SnapshotSeenGranularity)
	observe("m-1") // the latest, seen within the granularity: left alone
	if seen, sq := sighting("m-1"); !seen.Equal(first) || sq != seq {
		t.Fatalf("sighting rewritten to %v/%d, want %v/%d", seen, sq, first, seq)
	}
	clk.advance(s, time.Millisecond)
	observe("m-1")
	if seen, _ := sighting("m-1"); !seen.Equal(clk.Now()) {
		t.Fatalf("sighting %v after more than the granularity, want now (%v)", seen, clk.Now())
	}
	observe("m-2")
	observe("m-1") // not the latest any more: written at once
	seen, seq1 := sighting("m-1")
	_, seq2 := sighting("m-2")
	if !seen.Equal(clk.Now()) || seq1 <= seq2 {
		t.Fatalf("m-1 seen %v seq %d, m-2 seq %d: want m-1 seen now and newest", seen, seq1, seq2)
	}
	snaps, err := s.ModelSnapshots(ctx, sc.ID)
	if err != nil || len(snaps) != 2 || snaps[0].Snapshot != "m-1" {
		t.Fatalf("snapshots %+v, %v: want m-1 first", snaps, err)
	}
}
