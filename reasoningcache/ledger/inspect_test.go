package ledger

import (
	"context"
	"testing"
	"time"
)

// dbState is every row of the tables inspection must leave alone.
func dbState(t *testing.T, s *Store) string {
	t.Helper()
	var out string
	for _, q := range []string{
		`SELECT group_concat(payload_id || ':' || touched_at || ':' || row_version, ',') FROM payloads`,
		`SELECT group_concat(intent_id || ':' || updated_at || ':' || deadline_at, ',') FROM intents`,
		`SELECT group_concat(scope_id || ':' || generation || ':' || row_version, ',') FROM scopes`,
		`SELECT owner_since || ':' || opened_count || ':' || coverage_gap FROM meta`,
	} {
		var v *string
		if err := s.db.QueryRow(q).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v != nil {
			out += *v
		}
		out += "|"
	}
	return out
}

func TestInspectCountsWithoutTouching(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	s := openTest(t, "", Options{Now: func() time.Time { return now }})
	sc := testScope(1)
	a := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	storeTurn(t, s, sc, 1, dig("e0"), dig("e1"), []PlanBlock{a})
	storeTurn(t, s, testScope(2), 1, dig("s0"), dig("e0"), nil)
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("p"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("open")}); err != nil {
		t.Fatal(err)
	}
	before := dbState(t, s)
	now = now.Add(90 * time.Second)

	agg, err := s.Inspect(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Figure{
		"scopes": {2, true}, "observations": {3, true}, "replayable": {3, true}, "payloads": {2, true}, // two distinct outputs
		"start_poison": {1, true}, "end_conflict": {0, true}, "intents": {1, true},
	}
	got := map[string]Figure{
		"scopes": agg.Scopes, "observations": agg.Observations, "replayable": agg.ReplayableObservations,
		"payloads": agg.Payloads, "start_poison": agg.StartPoisonMarkers, "end_conflict": agg.EndConflictMarkers,
		"intents": agg.Intents,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %+v, want %+v", k, got[k], w)
		}
	}
	if agg.PayloadBytes.Value != 2*int64(len(`[{"type":"reasoning","id":"rs_1"}]`)) || !agg.PayloadBytes.Exact {
		t.Errorf("payload_bytes %+v", agg.PayloadBytes)
	}
	if agg.OldestPayloadIdleSeconds != 90 || agg.DatabaseBytes <= 0 || agg.PageCount <= 0 || agg.FormatVersion != int64(formatVersion()) {
		t.Errorf("aggregates %+v", agg)
	}
	if after := dbState(t, s); after != before {
		t.Fatalf("inspection changed the ledger:\n%s\n%s", before, after)
	}

	// counting stops at the row limit and says so
	agg, err = s.Inspect(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if agg.Observations != (Figure{3, false}) || agg.Scopes != (Figure{2, true}) || agg.Payloads != (Figure{2, true}) {
		t.Fatalf("bounded: observations %+v scopes %+v payloads %+v", agg.Observations, agg.Scopes, agg.Payloads)
	}
}
