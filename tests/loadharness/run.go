package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// config is what the flags set.
type config struct {
	Duration       time.Duration // per target and cell, split over the rounds
	Requests       int           // per target and cell, split over the rounds
	Concurrency    []int         // concurrency levels, each a cell per workload
	Workloads      []workload    // what to measure, in report order
	Rounds         int           // alternating relay/baseline phases per cell
	Warmup         time.Duration // per target and workload, at the highest concurrency
	WarmupRequests int           // cap of the warm-up per target and workload
	Caddy          string        // Caddy binary; empty: relaytest builds one
	LogLevel       string        // Caddy's log level
}

// validate checks the bounds of c.
func (c config) validate() error {
	switch {
	case c.Duration <= 0:
		return fmt.Errorf("loadharness: -duration must be positive")
	case c.Requests <= 0:
		return fmt.Errorf("loadharness: -requests must be positive")
	case len(c.Concurrency) == 0:
		return fmt.Errorf("loadharness: -concurrency needs at least one level")
	case len(c.Workloads) == 0:
		return fmt.Errorf("loadharness: -workloads needs json, sse or both")
	case c.Rounds <= 0:
		return fmt.Errorf("loadharness: -rounds must be positive")
	case c.Warmup < 0 || c.WarmupRequests < 0:
		return fmt.Errorf("loadharness: the warm-up must not be negative")
	}
	for _, n := range c.Concurrency {
		if n <= 0 || n > 4096 {
			return fmt.Errorf("loadharness: concurrency %d is outside 1..4096", n)
		}
	}
	return nil
}

// logTail is how much of Caddy's log run shows when requests failed.
const logTail = 8 << 10

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// run starts the stack, measures every cell and prints the report to out.
// Caddy's logs go to logw only when something fails.
func run(ctx context.Context, cfg config, out, logw io.Writer) ([]cellResult, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Caddy != "" {
		// relaytest uses this binary instead of building one
		if err := os.Setenv("RELAY_CADDY_BIN", cfg.Caddy); err != nil {
			return nil, fmt.Errorf("loadharness: %w", err)
		}
	}
	tb := &programTB{log: logw}
	defer tb.close()

	loadStart := loadAverage()
	var bin string
	if err := tb.do(func() { bin = relaytest.Binary(tb) }); err != nil {
		return nil, fmt.Errorf("loadharness: caddy binary: %w", err)
	}
	st, err := startStack(tb, cfg.LogLevel)
	if err != nil {
		return nil, err
	}
	maxConc := slices.Max(cfg.Concurrency)
	dials := &dialCounter{}
	client := newClient(maxConc, dials)
	defer client.CloseIdleConnections()

	printHeader(out, header{
		GoVersion: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Caddy: bin, Admin: st.caddy.Admin,
		LoadStart: loadStart, Duration: cfg.Duration, Requests: cfg.Requests,
		Rounds: cfg.Rounds, Warmup: cfg.Warmup, WarmupReqs: cfg.WarmupRequests,
	})

	type pair struct{ relay, base *target }
	pairs := make([]pair, len(cfg.Workloads))
	for i, w := range cfg.Workloads {
		r, b, err := st.targets(ctx, client, w)
		if err != nil {
			return nil, err
		}
		pairs[i] = pair{r, b}
		fmt.Fprintf(out, "%s: relay request %d B, answer %d B; baseline request %d B, answer %d B\n",
			w.name, len(r.body), r.answerBytes, len(b.body), b.answerBytes)
	}
	fmt.Fprintln(out)
	// Warm-up: connections, Caddy's and the fake's pools and caches, the
	// Go runtimes' heaps. Its figures are discarded.
	for _, p := range pairs {
		for _, t := range []*target{p.relay, p.base} {
			var discard sample
			phase(ctx, client, t, maxConc, cfg.WarmupRequests, cfg.Warmup, &discard)
			st.fake.Reset()
			if discard.errors > 0 {
				return nil, fmt.Errorf("loadharness: warm-up of %s: %d errors, first: %s", t.name, discard.errors, discard.firstErr)
			}
		}
	}

	var cells []cellResult
	for i, w := range cfg.Workloads {
		for _, conc := range cfg.Concurrency {
			var rs, bs sample
			measureCell(ctx, client, pairs[i].relay, pairs[i].base, &rs, &bs, conc, cfg, st)
			if err := ctx.Err(); err != nil {
				return cells, fmt.Errorf("loadharness: interrupted: %w", err)
			}
			cells = append(cells, cellResult{Workload: w.name, Concurrency: conc,
				Relay: summarize(&rs), Baseline: summarize(&bs)})
		}
	}
	if err := printTable(out, cells); err != nil {
		return cells, err
	}
	for _, c := range cells {
		if c.Relay.Errors+c.Baseline.Errors > 0 {
			fmt.Fprintf(logw, "caddy logs (the last %d bytes):\n%s\n", logTail, tail(st.caddy.Logs(), logTail))
			break
		}
	}
	fmt.Fprintf(out, "\nclient connections opened: relay %d, baseline %d (highest concurrency %d)\n",
		dials.count(st.relayURL), dials.count(st.baselineURL), maxConc)
	fmt.Fprintf(out, "load average at end: %s\n", loadAverage())
	return cells, nil
}

// measureCell alternates relay and baseline phases (relay first in even
// rounds, baseline first in odd ones: R B B R R B ...) so that drift in the
// machine's load hits both targets alike.
func measureCell(ctx context.Context, client *http.Client, relay, base *target, rs, bs *sample, conc int, cfg config, st *stack) {
	d := cfg.Duration / time.Duration(cfg.Rounds)
	for round := range cfg.Rounds {
		n := roundBudget(cfg.Requests, cfg.Rounds, round)
		order := []struct {
			t *target
			s *sample
		}{{relay, rs}, {base, bs}}
		if round%2 == 1 {
			order[0], order[1] = order[1], order[0]
		}
		for _, o := range order {
			phase(ctx, client, o.t, conc, n, d, o.s)
			// the fake records every request; keep its memory flat
			st.fake.Reset()
		}
	}
}

// roundBudget is the request cap of one round's phases: total split over
// rounds as evenly as possible, adding up to total.
func roundBudget(total, rounds, round int) int {
	n := total / rounds
	if round < total%rounds {
		n++
	}
	return n
}
