package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// config is what the flags set.
type config struct {
	Duration       time.Duration // per target and cell, split over the rounds
	Requests       int           // per target and cell, split over the rounds
	Concurrency    []int         // concurrency levels, each a cell per size, cache setting and workload
	Workloads      []workload    // what to measure, in report order
	Sizes          []historySize // history sizes, in report order
	Caches         []bool        // cache settings (false: off, true: on), in report order
	Rounds         int           // alternating relay/baseline phases per cell
	Warmup         time.Duration // per target, size, cache setting and workload, at the highest concurrency
	WarmupRequests int           // cap of each warm-up
	Burst          int           // concurrent histories of the memory burst; 0: no burst
	BurstSize      historySize   // size of each burst history
	ProfileDir     string        // where profiles go; empty: no profiles
	ProfileTime    time.Duration // length of each profile
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
	case len(c.Sizes) == 0 && c.Burst == 0:
		return fmt.Errorf("loadharness: -sizes none needs a burst: there is nothing else to measure")
	case len(c.Caches) == 0:
		return fmt.Errorf("loadharness: -cache needs off, on or both")
	case c.Rounds <= 0:
		return fmt.Errorf("loadharness: -rounds must be positive")
	case c.Warmup < 0 || c.WarmupRequests < 0:
		return fmt.Errorf("loadharness: the warm-up must not be negative")
	case c.Burst < 0 || c.Burst > 4096:
		return fmt.Errorf("loadharness: -burst %d is outside 0..4096", c.Burst)
	case c.Burst > 0 && c.BurstSize.bytes <= 0:
		return fmt.Errorf("loadharness: -burst-size must be positive")
	case c.ProfileDir != "" && c.ProfileTime < time.Second:
		return fmt.Errorf("loadharness: -profile-time must be at least 1s")
	}
	for _, n := range c.Concurrency {
		if n <= 0 || n > 4096 {
			return fmt.Errorf("loadharness: concurrency %d is outside 1..4096", n)
		}
	}
	return nil
}

// results is what a run measured.
type results struct {
	Cells    []cellResult
	Burst    *burstResult    // nil without a burst
	Profiles []profileResult // empty without -profile
}

// failed reports whether any request of the run failed, any replay was
// wrong or a profile is missing.
func (r *results) failed() bool {
	for _, c := range r.Cells {
		if c.Relay.Errors+c.Baseline.Errors > 0 || c.Replay.Wrong > 0 {
			return true
		}
	}
	profiles := r.Profiles
	if r.Burst != nil {
		if r.Burst.Errors > 0 || r.Burst.Replay.Wrong > 0 {
			return true
		}
		if r.Burst.Profile != nil {
			profiles = append(profiles[:len(profiles):len(profiles)], *r.Burst.Profile)
		}
	}
	for _, p := range profiles {
		if p.Err != "" {
			return true
		}
	}
	return false
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

// run starts the stacks, measures every cell, the burst and the profiles
// the config asks for and prints the report to out. Caddy's logs go to
// logw only when something fails.
func run(ctx context.Context, cfg config, out, logw io.Writer) (*results, error) {
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
	fake, upURL := startUpstream(tb)
	res := &results{}
	if len(cfg.Sizes) > 0 {
		if err := runTable(ctx, tb, fake, upURL, bin, loadStart, cfg, res, out, logw); err != nil {
			return res, err
		}
	} else {
		fmt.Fprintf(out, "load average at start: %s\n", loadStart)
	}
	if cfg.Burst > 0 {
		br, err := runBurst(ctx, tb, fake, upURL, bin, cfg, out)
		res.Burst = br
		if err != nil {
			return res, err
		}
	}
	for _, p := range res.Profiles {
		printProfile(out, p)
	}
	if res.Burst != nil && res.Burst.Profile != nil {
		printProfile(out, *res.Burst.Profile)
	}
	fmt.Fprintf(out, "load average at end: %s\n", loadAverage())
	return res, nil
}

// runTable starts one Caddy per cache setting, measures every cell of the
// table (and the per-size profiles) and prints the table into res and
// out; the Caddy processes are stopped when it returns.
func runTable(ctx context.Context, tb *programTB, fake *fakeupstream.Server, upURL, bin, loadStart string, cfg config, res *results, out, logw io.Writer) error {
	stacks := make([]*stack, len(cfg.Caches))
	var builderStack *stack // the one conversations are built through: cache on if measured
	for i, on := range cfg.Caches {
		st, err := startStack(tb, fake, upURL, cfg.LogLevel, on)
		if err != nil {
			return err
		}
		stacks[i] = st
		if builderStack == nil || on {
			builderStack = st
		}
	}
	maxConc := slices.Max(cfg.Concurrency)
	dials := &dialCounter{}
	client := newClient(maxConc, dials)
	defer client.CloseIdleConnections()

	h := header{
		GoVersion: runtime.Version(), OSArch: runtime.GOOS + "/" + runtime.GOARCH,
		GOMAXPROCS: runtime.GOMAXPROCS(0), NumCPU: runtime.NumCPU(), Caddy: bin,
		LoadStart: loadStart, Duration: cfg.Duration, Requests: cfg.Requests,
		Rounds: cfg.Rounds, Warmup: cfg.Warmup, WarmupReqs: cfg.WarmupRequests,
	}
	for _, st := range stacks {
		h.Admins = append(h.Admins, fmt.Sprintf("cache %s: pid %d, admin socket %s",
			cacheName(st.cache), st.caddy.PID(), strings.TrimPrefix(st.caddy.Admin, "unix/")))
	}
	printHeader(out, h)

	b := &builder{client: client, url: builderStack.relayURL + "/v1/chat/completions", fake: fake,
		name: "cache-" + cacheName(builderStack.cache)}
	measureErr := measureSizes(ctx, client, b, stacks, bin, cfg, res, out)
	// what was measured is printed even when a later part failed
	fmt.Fprintln(out)
	if err := printTable(out, res.Cells); err != nil {
		return err
	}
	if measureErr != nil || res.failed() {
		for _, st := range stacks {
			fmt.Fprintf(logw, "caddy (cache %s) logs, the last %d bytes:\n%s\n", cacheName(st.cache), logTail, tail(st.caddy.Logs(), logTail))
		}
	}
	if measureErr != nil {
		return measureErr
	}
	fmt.Fprintf(out, "\nclient connections opened:")
	for _, st := range stacks {
		fmt.Fprintf(out, " cache %s relay %d, baseline %d;", cacheName(st.cache), dials.count(st.relayURL), dials.count(st.baselineURL))
	}
	fmt.Fprintf(out, " highest concurrency %d\n", maxConc)
	fmt.Fprintf(out, "load average after the table: %s\n", loadAverage())
	for _, st := range stacks {
		st.caddy.Stop()
	}
	return nil
}

// measureSizes builds each size's conversations and measures its cells
// (and profiles, with -profile) on every stack, adding them to res.
func measureSizes(ctx context.Context, client *http.Client, b *builder, stacks []*stack, bin string, cfg config, res *results, out io.Writer) error {
	maxConc := slices.Max(cfg.Concurrency)
	for _, size := range cfg.Sizes {
		start := time.Now()
		convs, err := b.buildAll(ctx, "lh"+size.label, maxConc, size.bytes)
		if err != nil {
			return err
		}
		b.fake.Reset()
		fmt.Fprintf(out, "%s: %d conversations of %d earlier assistant turns built through the %s relay in %s\n",
			size.label, len(convs), earlierTurns, b.name, time.Since(start).Round(time.Millisecond))
		ix := newReplayIndex(convs)
		for _, st := range stacks {
			for _, w := range cfg.Workloads {
				cells, err := measureGroup(ctx, client, st, convs, ix, w, size, cfg, out)
				res.Cells = append(res.Cells, cells...)
				if err != nil {
					return err
				}
			}
			if st.cache && cfg.ProfileDir != "" {
				// a profile that fails says so in the report; the
				// measurement goes on
				res.Profiles = append(res.Profiles, profileHits(ctx, client, st, bin, convs[0], size, cfg))
			}
		}
	}
	return nil
}

// measureGroup measures one size, cache setting and workload at every
// concurrency level: probes, a warm-up, then the cells.
func measureGroup(ctx context.Context, client *http.Client, st *stack, convs []*conversation, ix replayIndex,
	w workload, size historySize, cfg config, out io.Writer) ([]cellResult, error) {
	relay, base, probes, err := st.targets(ctx, client, convs, w)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "%s cache %s %s: relay request %d B, answer %d B; baseline request %d B, answer %d B; probes replayed all %d turns in %d of %d\n",
		size.label, cacheName(st.cache), w.name, len(relay.bodies[0]), relay.answerBytes, len(base.bodies[0]), base.answerBytes,
		earlierTurns, probes.Hits, len(convs))
	if probes.Wrong > 0 {
		return nil, fmt.Errorf("loadharness: %s cache %s %s: %d probes replayed reasoning that was not their own", size.label, cacheName(st.cache), w.name, probes.Wrong)
	}
	// Warm-up: connections, Caddy's and the fake's pools and caches, the
	// Go runtimes' heaps. Its figures are discarded.
	maxConc := slices.Max(cfg.Concurrency)
	for _, t := range []*target{relay, base} {
		var discard sample
		phase(ctx, client, t, maxConc, cfg.WarmupRequests, cfg.Warmup, &discard)
		st.fake.Reset()
		if discard.errors > 0 {
			return nil, fmt.Errorf("loadharness: warm-up of %s: %d errors, first: %s", t.name, discard.errors, discard.firstErr)
		}
	}
	var cells []cellResult
	for _, conc := range cfg.Concurrency {
		var rs, bs sample
		tally := measureCell(ctx, client, relay, base, &rs, &bs, conc, cfg, st.fake, ix)
		if err := ctx.Err(); err != nil {
			return cells, fmt.Errorf("loadharness: interrupted: %w", err)
		}
		cells = append(cells, cellResult{Size: size.label, Cache: st.cache, Workload: w.name, Concurrency: conc,
			Relay: summarize(&rs), Baseline: summarize(&bs), Replay: tally})
	}
	return cells, nil
}

// measureCell alternates relay and baseline phases (relay first in even
// rounds, baseline first in odd ones: R B B R R B ...) so that drift in the
// machine's load hits both targets alike. It returns what the relay's
// upstream requests replayed.
func measureCell(ctx context.Context, client *http.Client, relay, base *target, rs, bs *sample, conc int, cfg config,
	fake *fakeupstream.Server, ix replayIndex) replayTally {
	var tally replayTally
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
			fake.Reset()
			phase(ctx, client, o.t, conc, n, d, o.s)
			if o.t.relay {
				tally.merge(tallyFake(fake, ix))
			}
			// the fake records every request; keep its memory flat
			fake.Reset()
		}
	}
	return tally
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
