package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// limitPages makes the writer's connection fail every write past n more
// pages with SQLITE_FULL: a fault injected at the SQLite layer.
func limitPages(t *testing.T, s *Store, extra int) {
	t.Helper()
	ctx := context.Background()
	var pages int
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.wconn.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+extra)); err != nil {
		t.Fatal(err)
	}
}

// bulkMarkers is a safety write of many new pages.
func bulkMarkers(s *Store, sc Scope, label string) error {
	var ms []Marker
	for k := 0; k < 200; k++ {
		ms = append(ms, Marker{Kind: MarkerStartPoison, Digest: dig("%s %d", label, k), Reason: strings.Repeat("r", 60)})
	}
	_, err := s.WriteMarkers(context.Background(), sc, ms)
	return err
}

// TestSafetyWriteRetriedAfterReserve: a safety write that fails for lack
// of room releases the reserve and is retried once; when the retry
// succeeds the guard stays down and the write is acknowledged.
func TestSafetyWriteRetriedAfterReserve(t *testing.T) {
	testHookReserveReleased = func(s *Store) {
		// The released reserve made room: lift the injected limit.
		_, _ = s.wconn.ExecContext(context.Background(), "PRAGMA max_page_count = 1073741823")
	}
	defer func() { testHookReserveReleased = nil }()
	s := openTest(t, "", Options{manualMaintenance: true, ReserveBytes: MinReserveBytes})
	if st, err := os.Stat(s.reserve.path); err != nil || st.Size() != MinReserveBytes {
		t.Fatalf("reserve file: %v, %v", st, err)
	}
	limitPages(t, s, 2)
	if err := bulkMarkers(s, testScope(1), "a"); err != nil {
		t.Fatalf("the retried safety write failed: %v", err)
	}
	if s.Guarded() {
		t.Fatal("guard latched although the retry succeeded")
	}
	if _, err := os.Stat(s.reserve.path); !os.IsNotExist(err) || s.reserve.size() != 0 {
		t.Fatalf("reserve not released: %v", err)
	}
	if s.life.admitting() {
		t.Fatal("payloads still admitted after a capacity failure")
	}
	// Space returns: the next sample admits payloads again and the reserve
	// comes back, physically allocated.
	s.sampleDisk()
	s.ensureReserve()
	st, err := os.Stat(s.reserve.path)
	if err != nil || s.reserve.size() != MinReserveBytes || !allocated(st) {
		t.Fatalf("reserve not re-created: %v, %v", st, err)
	}
	if !s.life.admitting() {
		t.Fatal("payloads not admitted once space returned")
	}
}

// TestGuardLatchesAfterFailedRetry: a safety write that still fails after
// the reserve was released latches the guard: the failing write and every
// later per-request write report ErrGuarded (which is ErrDisabled to
// callers, so requests are relayed without the cache), one error is
// logged, the guard file says what to do, and the next Open refuses the
// store until the guard is deleted; that Open consumes the coverage gap.
func TestGuardLatchesAfterFailedRetry(t *testing.T) {
	ctx := context.Background()
	released := 0
	testHookReserveReleased = func(*Store) { released++ }
	defer func() { testHookReserveReleased = nil }()
	core, logs := observer.New(zap.WarnLevel)
	path := t.TempDir() + "/c.sqlite"
	s := openTest(t, path, Options{manualMaintenance: true, ReserveBytes: MinReserveBytes, Logger: zap.New(core)})
	sc := testScope(1)
	kept := storeTurn(t, s, sc, 1, dig("s0"), dig("e0"), nil)
	limitPages(t, s, 2)

	err := bulkMarkers(s, sc, "a")
	if !errors.Is(err, ErrGuarded) || !errors.Is(err, ErrDisabled) || !isCapacityError(err) {
		t.Fatalf("failing safety write: %v; want ErrGuarded with its cause", err)
	}
	if released != 1 || !s.Guarded() || s.Enabled() {
		t.Fatalf("released %d times, guarded %v, enabled %v", released, s.Guarded(), s.Enabled())
	}
	if _, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s1")}); !errors.Is(err, ErrDisabled) {
		t.Fatalf("write after the latch: %v", err)
	}
	if n := logs.FilterLevelExact(zap.ErrorLevel).Len(); n != 1 {
		t.Fatalf("%d error lines, want 1", n)
	}
	if logs.FilterMessageSnippet("released the reserve").Len() != 1 {
		t.Fatal("the guard latched without a logged reserve retry")
	}
	text, err := os.ReadFile(path + ".guard")
	if err != nil || !strings.Contains(string(text), "delete this file") {
		t.Fatalf("guard file: %q, %v", text, err)
	}
	// Room again: maintenance records the coverage gap.
	if _, err := s.wconn.ExecContext(ctx, "PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	s.maintain(ctx)
	lc, err := s.Lifecycle(ctx)
	if err != nil || !lc.GuardLatched || !lc.GapRecorded || lc.GuardCause == "" {
		t.Fatalf("lifecycle: %+v, %v", lc, err)
	}
	mustClose(t, s)

	if _, err := Open(path, Options{ReserveBytes: MinReserveBytes}); !errors.Is(err, ErrGuarded) ||
		!strings.Contains(err.Error(), "delete") {
		t.Fatalf("Open with a guard file: %v", err)
	}
	if err := os.Remove(path + ".guard"); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, path, Options{manualMaintenance: true, ReserveBytes: MinReserveBytes})
	if gen, _ := s.ScopeGeneration(ctx, sc.ID); gen != 2 {
		t.Fatalf("generation %d after the guarded run, want 2 (coverage gap consumed)", gen)
	}
	if obs, _ := s.Observations(ctx, sc.ID, []int64{kept.ObservationID}); len(obs) != 1 {
		t.Fatal("an acknowledged observation was lost")
	}
	if ms, _ := s.MarkersAt(ctx, sc.ID, []string{dig("a 0")}); len(ms) != 0 {
		t.Fatal("the failed write left markers")
	}
}

// TestAdmissionStopsPayloadsNotObservations: above disk_admission new
// payloads are not admitted; the observation is still recorded.
func TestAdmissionStopsPayloadsNotObservations(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, "", Options{manualMaintenance: true, ReserveBytes: MinReserveBytes, DiskAdmission: 1})
	s.sampleDisk()
	lc, _ := s.Lifecycle(ctx)
	if lc.Admitting {
		t.Fatal("admitting over disk_admission")
	}
	sc := testScope(1)
	id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: sc, StartDigest: dig("s")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: dig("e"), EnvelopeFP: dig("env"),
		PayloadFP: dig("p"), OutputHash: dig("o"), Replayable: true, Payload: []byte(`"x"`)})
	if err != nil || res.Outcome != OutcomeStored || res.PayloadID != 0 {
		t.Fatalf("commit over admission: %+v, %v; want an observation without payload", res, err)
	}
	cands, _ := s.Candidates(ctx, sc.ID, dig("e"))
	if len(cands) != 1 || cands[0].Replayable {
		t.Fatalf("observation over admission: %+v", cands)
	}
}
