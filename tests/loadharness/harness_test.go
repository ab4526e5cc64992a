package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// TestHarness runs the whole harness briefly: two real Caddy processes
// (cache off and on), both targets, a 20 KB history, both workloads at
// concurrency 1 and 2, 12 requests per target and cell, a burst of four
// 64 KiB histories, and the profiles. It asserts what was measured (every
// request succeeded, every cache-on request was a verified replay hit and
// no cache-off one was, the report's shape), never how fast.
func TestHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Caddy; skipped under -short")
	}
	// relaytest builds the binary (or takes $RELAY_CADDY_BIN); run reuses it
	relaytest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cfg := config{
		Duration:       20 * time.Second, // far more than 12 requests need: the count bounds each phase
		Requests:       12,
		Concurrency:    []int{1, 2},
		Workloads:      allWorkloads,
		Sizes:          []historySize{{"20KB", 20_000}},
		Caches:         []bool{false, true},
		Rounds:         2,
		Warmup:         5 * time.Second,
		WarmupRequests: 4,
		Burst:          4,
		BurstSize:      historySize{"64KiB", 64 << 10},
		ProfileDir:     t.TempDir(),
		ProfileTime:    time.Second,
		LogLevel:       "INFO",
	}
	var out, logs bytes.Buffer
	res, err := run(ctx, cfg, &out, &logs)
	if err != nil {
		t.Fatalf("run: %v\nlogs:\n%s\nreport:\n%s", err, logs.String(), out.String())
	}
	t.Logf("\n%s", out.String())

	if len(res.Cells) != 8 {
		t.Fatalf("got %d cells, want 8 (cache off, on x json, sse x 1, 2)", len(res.Cells))
	}
	for _, c := range res.Cells {
		name := fmt.Sprintf("%s cache %s c=%d", c.Workload, cacheName(c.Cache), c.Concurrency)
		for tn, st := range map[string]stats{"relay": c.Relay, "baseline": c.Baseline} {
			if st.Errors != 0 {
				t.Errorf("%s %s: %d errors, first: %s", name, tn, st.Errors, st.FirstErr)
			}
			if st.Requests != cfg.Requests {
				t.Errorf("%s %s: %d successful requests, want exactly %d", name, tn, st.Requests, cfg.Requests)
			}
			if st.ReqPerS <= 0 || st.P50 <= 0 || st.P99 < st.P50 {
				t.Errorf("%s %s: implausible figures %+v", name, tn, st)
			}
		}
		// every relay request reached the upstream once; with the cache,
		// each carried its own conversation's ten earlier turns
		wantHits := 0
		if c.Cache {
			wantHits = cfg.Requests
		}
		if want := (replayTally{Upstream: cfg.Requests, Hits: wantHits}); c.Replay != want {
			t.Errorf("%s: replay tally %+v, want %+v", name, c.Replay, want)
		}
		rps, p50, p99 := c.ratios()
		for _, r := range []float64{rps, p50, p99} {
			if math.IsNaN(r) || r <= 0 {
				t.Errorf("%s: ratios %v %v %v", name, rps, p50, p99)
			}
		}
	}
	if res.failed() {
		t.Error("the run reports failures")
	}

	b := res.Burst
	if b == nil {
		t.Fatal("no burst result")
	}
	if b.Clients != 4 || b.Streamed != 2 || b.OK != 4 || b.Errors != 0 || b.Replay.Hits != 4 {
		t.Errorf("burst %+v", b)
	}
	if b.Before.RSS <= 0 || b.Peak < b.Before.RSS/2 || b.After.RSS <= 0 {
		t.Errorf("burst memory: before %+v, peak %d, after %+v", b.Before, b.Peak, b.After)
	}
	if len(res.Profiles) != 1 || b.Profile == nil {
		t.Fatalf("profiles: %d of the size, burst %v", len(res.Profiles), b.Profile != nil)
	}
	for _, p := range append(res.Profiles, *b.Profile) {
		if p.Requests == 0 || len(p.Files) != len(profileKinds) {
			t.Errorf("%s: %d requests, %d views", p.Name, p.Requests, len(p.Files))
		}
		for _, f := range p.Files {
			if _, err := os.Stat(f.Path); err != nil || strings.Contains(f.Top, "go tool pprof failed") {
				t.Errorf("%s %s: %v\n%s", p.Name, f.View, err, f.Top)
			}
		}
	}

	text := out.String()
	for _, want := range []string{"GOMAXPROCS=", "load average at start: ", "load average at end: ", "client connections opened: ",
		"p50 ratio", "added p50", "req/s ratio", "replay", "burst: RSS before ", "== profiles: 20KB replay hits", "-- cpu, flat"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	sizes := regexp.MustCompile(`(?m)^20KB cache (off|on) (json|sse): relay request [1-9][0-9]* B, answer [1-9][0-9]* B; baseline request [1-9][0-9]* B, answer [1-9][0-9]* B; probes replayed all 10 turns in (0|2) of 2$`)
	if n := len(sizes.FindAllString(text, -1)); n != 4 {
		t.Errorf("report has %d size lines, want 4", n)
	}
	// one row per cell: size, cache, workload, concurrency, then for each
	// target the count (12), req/s, p50, p99 and errors (0), then the
	// ratios, the added p50 and the replay share
	row := regexp.MustCompile(`(?m)^\s*20KB\s+(off|on)\s+(json|sse)\s+(1|2)\s+12\s+[0-9.]+\s+[0-9.]+ms\s+[0-9.]+ms\s+0\s+12\s+[0-9.]+\s+[0-9.]+ms\s+[0-9.]+ms\s+0\s+[0-9.]+x\s+[-+][0-9.]+ms\s+[0-9.]+x\s+(0\.0|100\.0)%\s*$`)
	if n := len(row.FindAllString(text, -1)); n != 8 {
		t.Errorf("report has %d error-free table rows, want 8:\n%s", n, text)
	}
}
