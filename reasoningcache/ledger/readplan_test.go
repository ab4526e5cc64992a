package ledger

import (
	"context"
	"testing"
	"time"
)

func TestSnapshotsAndBulkReads(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	commit := func(start, end, snap string) CommitResult {
		t.Helper()
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: start})
		if err != nil {
			t.Fatalf("CreateIntent: %v", err)
		}
		res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end,
			EnvelopeFP: dig("e%s", end), PayloadFP: dig("p%s", end), OutputHash: dig("o%s", end),
			Replayable: true, Payload: []byte(`[]`), ModelSnapshot: snap, MoveToDelivery: true})
		if err != nil {
			t.Fatalf("CommitObservation: %v", err)
		}
		if err := s.ResolveIntent(ctx, id); err != nil {
			t.Fatalf("ResolveIntent: %v", err)
		}
		return res
	}
	a := commit(dig("s1"), dig("e1"), "m-1")
	b := commit(dig("s2"), dig("e2"), "m-2")
	commit(dig("s3"), dig("e3"), "m-1")
	snaps, err := s.ModelSnapshots(ctx, sc.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(snaps) != 2 || snaps[0].Snapshot != "m-1" || snaps[1].Snapshot != "m-2" || snaps[0].Seq <= snaps[1].Seq {
		t.Fatalf("snapshots %+v, want m-1 newest then m-2", snaps)
	}
	obs, err := s.Observations(ctx, sc.ID, []int64{b.ObservationID, a.ObservationID, 9999})
	if err != nil {
		t.Fatal(err)
	}
	if len(obs) != 2 || obs[0].ID != a.ObservationID || obs[0].ModelSnapshot != "m-1" || obs[1].ModelSnapshot != "m-2" {
		t.Fatalf("observations %+v", obs)
	}
	if other, _ := s.Observations(ctx, testScope(2).ID, []int64{a.ObservationID}); len(other) != 0 {
		t.Fatalf("another scope read %d observations", len(other))
	}
	cands, err := s.Candidates(ctx, sc.ID, dig("e2"))
	if err != nil || len(cands) != 1 || cands[0].ModelSnapshot != "m-2" {
		t.Fatalf("candidates %+v, %v", cands, err)
	}
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerEndConflict, Digest: dig("e1"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}
	ms, err := s.MarkersAt(ctx, sc.ID, []string{dig("e1"), dig("e2")})
	if err != nil || len(ms) != 1 || ms[0].Digest != dig("e1") {
		t.Fatalf("markers %+v, %v", ms, err)
	}
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s9")})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := s.IntentsAt(ctx, sc.ID, []string{dig("s9"), dig("s1")})
	if err != nil || len(ins) != 1 || ins[0].ID != id {
		t.Fatalf("intents %+v, %v", ins, err)
	}
}

func TestCreateIntentChecksStepStart(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 0, dig("s1"), dig("e1"), nil)
	// A second, unresolved generation from the step's start competes.
	other, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s1")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("s2"), Plan: []PlanBlock{step}})
	if !IsReason(err, ReasonCompetingIntent) {
		t.Fatalf("err %v, want competing_intent", err)
	}
	if err := s.PoisonIntent(ctx, other, "test_abandoned"); err != nil {
		t.Fatal(err)
	}
	if err := s.PoisonIntent(ctx, other, "test_abandoned"); !IsReason(err, ReasonIntentMissing) {
		t.Fatalf("second poison: %v, want intent_missing", err)
	}
	_, err = s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("s2"), Plan: []PlanBlock{step}})
	if !IsReason(err, ReasonStartPoisoned) {
		t.Fatalf("err %v, want start_poisoned (the step's start)", err)
	}
}

func TestExpireIntents(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_800_000_000, 0)
	s := openTest(t, "", Options{Now: func() time.Time { return now }})
	sc := testScope(1)
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MoveToDelivery(ctx, id, dig("e1")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.ExpireIntents(ctx, now.Add(-time.Minute), "expired"); err != nil || n != 0 {
		t.Fatalf("fresh intent expired: %d, %v", n, err)
	}
	if n, err := s.ExpireIntents(ctx, now.Add(time.Minute), "expired"); err != nil || n != 1 {
		t.Fatalf("ExpireIntents = %d, %v; want 1", n, err)
	}
	ms, err := s.MarkersAt(ctx, sc.ID, []string{dig("s1"), dig("e1")})
	if err != nil || len(ms) != 2 {
		t.Fatalf("markers %+v, %v; want start poison at start and end", ms, err)
	}
	if left, _ := s.UnresolvedIntents(ctx, 10); len(left) != 0 {
		t.Fatalf("%d intents left", len(left))
	}
}

func TestMigrateFromFormat1(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/cache.sqlite"
	s := openTest(t, path, Options{})
	sc := testScope(1)
	step := storeTurn(t, s, sc, 0, dig("s1"), dig("e1"), nil)
	// Take the database back to format 1, as an older build left it.
	for _, stmt := range []string{
		`ALTER TABLE observations DROP COLUMN parent_id`,
		`DROP INDEX intents_updated`, `DROP TABLE scope_snapshots`,
		`ALTER TABLE observations DROP COLUMN model_snapshot`,
		`UPDATE meta SET format_version = 1`, `PRAGMA user_version = 1`,
	} {
		if _, err := s.wconn.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.Close())
	s = openTest(t, path, Options{})
	obs, err := s.Observations(ctx, sc.ID, []int64{step.ObservationID})
	must(err)
	if len(obs) != 1 || obs[0].ModelSnapshot != "" {
		t.Fatalf("migrated observations %+v", obs)
	}
	snaps, err := s.ModelSnapshots(ctx, sc.ID)
	must(err)
	if len(snaps) != 0 {
		t.Fatalf("snapshots %+v", snaps)
	}
}
