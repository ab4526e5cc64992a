package ledger

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPragmasOnEveryPooledConnection(t *testing.T) {
	s := openTest(t, "", Options{})
	ctx := context.Background()
	// Hold several connections at once so the pool has to open new ones.
	const n = 6
	for i := 0; i < n; i++ {
		c, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var journal string
		var fk, sync, autockpt, busy int
		if err := c.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&journal); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			name string
			dst  *int
		}{{"foreign_keys", &fk}, {"synchronous", &sync}, {"wal_autocheckpoint", &autockpt}, {"busy_timeout", &busy}} {
			if err := c.QueryRowContext(ctx, "PRAGMA "+p.name).Scan(p.dst); err != nil {
				t.Fatal(err)
			}
		}
		if journal != "wal" || fk != 1 || sync != 2 || autockpt != 0 || busy != 5000 {
			t.Errorf("conn %d: journal_mode=%s foreign_keys=%d synchronous=%d wal_autocheckpoint=%d busy_timeout=%d",
				i, journal, fk, sync, autockpt, busy)
		}
	}
}

func TestSecondOpenFailsFast(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.sqlite")
	s := openTest(t, path, Options{})
	_, err := Open(path, Options{})
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("second Open: %v, want ErrInUse", err)
	}
	if !strings.Contains(err.Error(), "use `caddy reload`") || !strings.Contains(err.Error(), path) {
		t.Errorf("message does not say what to do: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	_ = s2.Close()
}

func TestDisabledWithoutDatabaseCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := Open(filepath.Join(dir, "c.sqlite"), Options{Disabled: true})
	if !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("Open disabled: %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("disabled open created %s (stat: %v)", dir, err)
	}
}

func TestCoverageGap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.sqlite")
	sc := testScope(1)

	s := openTest(t, path, Options{})
	step := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	if _, err := s.WriteMarkers(ctx, sc, []Marker{{Kind: MarkerStartPoison, Digest: dig("m0"), Reason: "test"}}); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)

	// A continuously enabled restart keeps the generation.
	s = openTest(t, path, Options{})
	if g, _ := s.ScopeGeneration(ctx, sc.ID); g != 1 {
		t.Fatalf("generation after enabled restart = %d, want 1", g)
	}
	mustClose(t, s)

	// Disabled: owns the file, records a gap, refuses writes.
	s = openTest(t, path, Options{Disabled: true})
	if _, err := Open(path, Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("disabled store does not keep the lock: %v", err)
	}
	if gap, _ := s.CoverageGap(ctx); !gap {
		t.Fatal("disabled open did not record a coverage gap")
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("x")}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("write while disabled: %v, want ErrDisabled", err)
	}
	mustClose(t, s)

	// The next enabled open consumes the gap: generation advances,
	// payloads and markers are kept.
	s = openTest(t, path, Options{})
	if g, _ := s.ScopeGeneration(ctx, sc.ID); g != 2 {
		t.Fatalf("generation after gap = %d, want 2", g)
	}
	if gap, _ := s.CoverageGap(ctx); gap {
		t.Fatal("gap not consumed")
	}
	if c, _ := s.Candidates(ctx, sc.ID, dig("e0")); len(c) != 0 {
		t.Fatalf("old generation still a candidate: %+v", c)
	}
	if _, err := s.Payload(ctx, step.PayloadID); err != nil {
		t.Fatalf("payload lost: %v", err)
	}
	if ms, err := s.Markers(ctx, sc.ID, dig("m0")); err != nil || len(ms) != 1 {
		t.Fatalf("markers after the gap: %+v (%v), want the one written before it", ms, err)
	}
	// Reload-style switching without giving up the file.
	if err := s.SetEnabled(ctx, false); err != nil {
		t.Fatal(err)
	}
	if gap, _ := s.CoverageGap(ctx); !gap {
		t.Fatal("SetEnabled(false) did not record a gap")
	}
	if err := s.SetEnabled(ctx, true); err != nil {
		t.Fatal(err)
	}
	if g, _ := s.ScopeGeneration(ctx, sc.ID); g != 3 {
		t.Fatalf("generation after SetEnabled(true) = %d, want 3", g)
	}
}

func TestRecoveryPoisonsUnresolvedIntents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.sqlite")
	sc := testScope(1)
	s := openTest(t, path, Options{})
	step := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	dispatch, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("e0"), Plan: []PlanBlock{step}})
	if err != nil {
		t.Fatal(err)
	}
	delivery, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MoveToDelivery(ctx, delivery, dig("e1")); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s) // an orderly close does not resolve intents: their outcome is unknown

	s = openTest(t, path, Options{})
	if in, _ := s.UnresolvedIntents(ctx, 10); len(in) != 0 {
		t.Fatalf("intents left after recovery: %+v", in)
	}
	for _, d := range []string{dig("e0"), dig("s1"), dig("e1")} {
		ms, err := s.Markers(ctx, sc.ID, d)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Kind != MarkerStartPoison || ms[0].Reason != "unresolved_at_startup" {
			t.Errorf("markers at %.8s: %+v", d, ms)
		}
	}
	if ms, _ := s.Markers(ctx, sc.ID, dig("e0")); len(ms) == 1 && ms[0].IntentID != dispatch {
		t.Errorf("marker intent id %d, want %d", ms[0].IntentID, dispatch)
	}
	// A poisoned start still takes an intent with a valid plan: the poison
	// covers the outputs at that position, not the blocks beneath it (a
	// step whose own start is poisoned is refused: readplan_test).
	retry, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, Generation: 1, StartDigest: dig("e0"), Plan: []PlanBlock{step}})
	if err != nil {
		t.Fatalf("CreateIntent at a poisoned start: %v", err)
	}
	if err := s.ResolveIntent(ctx, retry); err != nil {
		t.Fatal(err)
	}
	// Pins were released with the intents.
	var pins int
	if err := s.db.QueryRow(`SELECT count(*) FROM dependencies WHERE kind = 'pin'`).Scan(&pins); err != nil || pins != 0 {
		t.Fatalf("pins left: %d (%v)", pins, err)
	}
}

func TestNewerFormatRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.sqlite")
	s := openTest(t, path, Options{})
	if _, err := s.wconn.ExecContext(context.Background(), "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	mustClose(t, s)
	if _, err := Open(path, Options{}); !errors.Is(err, ErrNewerFormat) {
		t.Fatalf("Open: %v, want ErrNewerFormat", err)
	}
}

func mustClose(t testing.TB, s *Store) {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
