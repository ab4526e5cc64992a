package main

import (
	"bytes"
	"context"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// TestHarness runs the whole harness briefly: a real Caddy, both targets,
// both workloads at concurrency 1 and 2, 20 requests per target and cell.
func TestHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Caddy; skipped under -short")
	}
	// relaytest builds the binary (or takes $RELAY_CADDY_BIN); run reuses it
	relaytest.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cfg := config{
		Duration:       20 * time.Second, // far more than 20 requests need: the count bounds each phase
		Requests:       20,
		Concurrency:    []int{1, 2},
		Workloads:      allWorkloads,
		Rounds:         2,
		Warmup:         5 * time.Second,
		WarmupRequests: 4,
		LogLevel:       "INFO",
	}
	var out, logs bytes.Buffer
	cells, err := run(ctx, cfg, &out, &logs)
	if err != nil {
		t.Fatalf("run: %v\nlogs:\n%s", err, logs.String())
	}
	t.Logf("\n%s", out.String())

	if len(cells) != 4 {
		t.Fatalf("got %d cells, want 4 (json, sse x 1, 2)", len(cells))
	}
	for _, c := range cells {
		for name, st := range map[string]stats{"relay": c.Relay, "baseline": c.Baseline} {
			if st.Errors != 0 {
				t.Errorf("%s c=%d %s: %d errors, first: %s", c.Workload, c.Concurrency, name, st.Errors, st.FirstErr)
			}
			if st.Requests != cfg.Requests {
				t.Errorf("%s c=%d %s: %d successful requests, want exactly %d", c.Workload, c.Concurrency, name, st.Requests, cfg.Requests)
			}
			if st.ReqPerS <= 0 || st.P50 <= 0 || st.P99 < st.P50 {
				t.Errorf("%s c=%d %s: implausible figures %+v", c.Workload, c.Concurrency, name, st)
			}
		}
		rps, p50, p99 := c.ratios()
		for _, r := range []float64{rps, p50, p99} {
			if math.IsNaN(r) || r <= 0 {
				t.Errorf("%s c=%d: ratios %v %v %v", c.Workload, c.Concurrency, rps, p50, p99)
			}
		}
	}

	text := out.String()
	for _, want := range []string{"GOMAXPROCS=", "load average at start: ", "load average at end: ", "client connections opened: ", "ratio req/s", "ratio p99"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	sizes := regexp.MustCompile(`(?m)^(json|sse): relay request [1-9][0-9]* B, answer [1-9][0-9]* B; baseline request [1-9][0-9]* B, answer [1-9][0-9]* B$`)
	if n := len(sizes.FindAllString(text, -1)); n != 2 {
		t.Errorf("report has %d size lines, want 2", n)
	}
	// one row per cell: workload, concurrency, then for each target the
	// count (20), req/s, p50, p99 and errors (0), then the three ratios
	row := regexp.MustCompile(`(?m)^\s*(json|sse)\s+(1|2)\s+20\s+[0-9.]+\s+[0-9.]+ms\s+[0-9.]+ms\s+0\s+20\s+[0-9.]+\s+[0-9.]+ms\s+[0-9.]+ms\s+0\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+\s*$`)
	if n := len(row.FindAllString(text, -1)); n != 4 {
		t.Errorf("report has %d error-free table rows, want 4:\n%s", n, text)
	}
}
