//go:build linux

package ledger

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/smallfs"
)

// TestDiskFullRealFilesystem runs conversations on a ledger in an 8 MiB
// tmpfs, fills the filesystem, goes on, frees it, and goes on again,
// counting what each turn got per phase: "stored" (intent, observation
// and resolve committed), "uncached" (the store said ErrDisabled: the
// relay forwards the request without the cache) or "error" (what the relay
// would have to answer with 503). Then it checks the store: no
// acknowledged observation lost, integrity_check ok, the guard latched
// only after a reserve retry, the next start refused until the guard is
// deleted, and then the coverage gap consumed so nothing from before
// unobserved traffic is replayed.
func TestDiskFullRealFilesystem(t *testing.T) {
	ctx := context.Background()
	dir := smallfs.Mount(t, "8m")
	path := filepath.Join(dir, "data", "cache.sqlite")
	core, logs := observer.New(zap.InfoLevel)
	opts := Options{manualMaintenance: true, ReserveBytes: 1 << 20, WALLimit: 1 << 20, Logger: zap.New(core)}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	type conv struct {
		sc   Scope
		plan []PlanBlock
		next int
	}
	convs := make([]*conv, 4)
	for i := range convs {
		convs[i] = &conv{sc: testScope(100 + i)}
	}
	acked := map[int64]string{} // observation id -> end digest
	payload := []byte(`"` + strings.Repeat("z", 8<<10) + `"`)
	turn := func(c *conv) string {
		start := dig("%s start %d", c.sc.ID, c.next)
		end := dig("%s end %d", c.sc.ID, c.next)
		c.next++
		gen, err := s.ScopeGeneration(ctx, c.sc.ID)
		if err != nil {
			return "error"
		}
		plan := c.plan
		if gen == 0 {
			plan = nil
		}
		id, err := s.CreateIntent(ctx, CreateIntentRequest{Scope: c.sc, Generation: gen, StartDigest: start, Plan: plan})
		if errors.Is(err, ErrDisabled) {
			return "uncached"
		}
		if err != nil {
			t.Logf("create intent: %v", err)
			return "error"
		}
		res, err := s.CommitObservation(ctx, CommitObservationRequest{IntentID: id, EndDigest: end, EnvelopeFP: dig("env %s", end),
			PayloadFP: dig("p %s", end), OutputHash: dig("o %s", end), Replayable: true, Payload: payload, MoveToDelivery: true})
		if errors.Is(err, ErrDisabled) {
			return "uncached"
		}
		if err != nil {
			t.Logf("commit: %v", err)
			return "error"
		}
		acked[res.ObservationID] = end
		if res.PayloadID != 0 {
			c.plan = append(append([]PlanBlock(nil), c.plan...), PlanBlock{ObservationID: res.ObservationID, PayloadID: res.PayloadID, EndDigest: end})
		} else {
			c.plan = nil // not replayable: the chain starts again
		}
		if err := s.ResolveIntent(ctx, id); err != nil && !errors.Is(err, ErrDisabled) {
			t.Logf("resolve: %v", err)
			return "error"
		}
		return "stored"
	}
	filler := filepath.Join(dir, "filler")
	phase := func(name string, n int, keepFull bool) map[string]int {
		counts := map[string]int{}
		for i := 0; i < n; i++ {
			counts[turn(convs[i%len(convs)])]++
			if i%10 == 9 {
				s.maintain(ctx)
				if keepFull {
					smallfs.Fill(t, filler) // take what maintenance freed (WAL truncation, reserve)
				}
			}
		}
		lc, _ := s.Lifecycle(ctx)
		fmt.Printf("disk-full phase %-7s %v  (admitting %v, reserve %d, guard %v, free %d KiB, db %d KiB, wal %d KiB)\n",
			name, counts, lc.Admitting, lc.ReserveBytes, lc.GuardLatched, lc.FreeBytes>>10, lc.DatabaseBytes>>10, lc.WALBytes>>10)
		return counts
	}

	before := phase("before", 60, false)
	if before["stored"] != 60 {
		t.Fatalf("before the disk filled: %v", before)
	}
	smallfs.Fill(t, filler)
	s.maintain(ctx)
	smallfs.Fill(t, filler)
	full := phase("full", 120, true)
	if full["error"] > 1 {
		t.Errorf("full disk: %d turns failed; only the latching moment may fail", full["error"])
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	s.maintain(ctx)
	freed := phase("freed", 60, false)
	if freed["error"] != 0 {
		t.Errorf("after freeing: %v", freed)
	}
	latched := s.Guarded()
	if latched {
		if freed["uncached"] != 60 {
			t.Errorf("a latched store served the cache: %v", freed)
		}
		// The guard latched only after a reserve retry.
		var retried, guardLogged int
		for i, e := range logs.All() {
			switch {
			case strings.Contains(e.Message, "released the reserve"):
				retried = i + 1
			case e.Level == zap.ErrorLevel:
				guardLogged = i + 1
			}
		}
		if retried == 0 || guardLogged < retried || logs.FilterLevelExact(zap.ErrorLevel).Len() != 1 {
			t.Errorf("guard latched without a reserve retry before it (retry line %d, guard line %d)", retried, guardLogged)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	if latched {
		if _, err := Open(path, opts); !errors.Is(err, ErrGuarded) {
			t.Fatalf("restart with the guard present: %v", err)
		}
		if err := os.Remove(path + guardSuffix); err != nil {
			t.Fatal(err)
		}
	}
	opts.Logger = nil
	s, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ok string
	if err := s.db.QueryRow(`PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		t.Fatalf("integrity_check: %q, %v", ok, err)
	}
	for id, end := range acked {
		var got string
		if err := s.db.QueryRow(`SELECT end_digest FROM observations WHERE observation_id = ?`, id).Scan(&got); err != nil || got != end {
			t.Fatalf("acknowledged observation %d: %q, %v", id, got, err)
		}
	}
	// No wrong replay: after a latched run nothing from before it is
	// still a candidate (the coverage gap advanced every generation).
	for _, c := range convs {
		gen, _ := s.ScopeGeneration(ctx, c.sc.ID)
		if latched && gen < 2 {
			t.Errorf("scope generation %d after a guarded run: the coverage gap was not consumed", gen)
		}
	}
	fmt.Printf("disk-full: %d acknowledged observations intact after restart; guard latched: %v\n", len(acked), latched)
}
