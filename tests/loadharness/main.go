// Command loadharness measures the reasoning relay against plain Caddy
// reverse_proxy in front of the same fake Responses upstream, and prints
// throughput and latency as relay/baseline ratios. It is a program, not part
// of `go test ./...`: run it by hand on a quiet machine.
//
//	go run ./tests/loadharness -duration 10s
//	go run ./tests/loadharness -duration 30s -concurrency 1,8,32 -caddy ./caddy
//
// Flags:
//
//	-duration 10s       time per target and cell (split over the rounds)
//	-requests 1000000   request cap per target and cell (split over the rounds)
//	-concurrency 1,32   concurrency levels; each is one cell per workload
//	-workloads json,sse which workloads to measure
//	-rounds 4           alternating relay/baseline phases per cell
//	-warmup 1s          warm-up per target and workload, at the highest concurrency
//	-warmup-requests 5000  request cap of each warm-up
//	-caddy PATH         the Caddy binary to use (default: $RELAY_CADDY_BIN,
//	                    else one built from ./caddymodule/cmd/caddy)
//	-log-level INFO     Caddy's log level (DEBUG logs every relay request,
//	                    which the baseline does not: keep INFO for figures)
//
// # What runs
//
// One fake Responses upstream (tests/fakeupstream, an httptest server on
// 127.0.0.1 inside this process) and one Caddy process with two sites on
// two loopback ports: the relay (reasoning_relay pointed at the fake) and
// the baseline (reverse_proxy to the fake, flush_interval -1 so server-sent
// events stream through, header_up swapping the client's token for the
// upstream key as the relay does). Both sites share one Caddy runtime.
//
// For each workload (json: stream false; sse: stream true) the relay gets
// a Chat Completions request, a small Cursor-like conversation with a
// system prompt, an earlier exchange, a follow-up and two tools, on
// /v1/chat/completions. Before measuring, the harness sends it once and
// records the Responses request the relay sent upstream; that exact body
// is what the baseline gets on /v1/responses, so both targets ask the
// upstream for the same work and get the same answer (a text answer with
// a reasoning summary and encrypted reasoning). Every answer is read to its
// end: JSON must be complete, a relay stream must end in "data: [DONE]" and
// a baseline stream must contain "event: response.completed". Anything
// else, a non-200 status or a transport error is counted as an error.
//
// Each workload x concurrency cell runs in rounds that alternate which
// target goes first (relay, baseline, baseline, relay, ...), so that other
// work on the shared machine hits both alike. Each phase is bounded both by
// time and by a request count; all traffic goes to 127.0.0.1 and the
// program stops by itself (or on Ctrl-C, stopping Caddy).
//
// # Reading the report
//
// The header names the Go version, GOMAXPROCS and CPU count, the Caddy
// binary, the bounds, and the load average at the start; then one line per
// workload gives the sizes of both targets' request and answer bodies (the
// baseline's client receives the Responses wire format, encrypted reasoning
// included, where the relay's receives the smaller Chat format).
//
// Per cell the table shows, for the relay and the baseline, the number n
// of successful requests, successful requests per second of phase wall
// time, the 50th and 99th percentile latency (request sent until the last
// byte of the answer was read; nearest rank, so a p99 of fewer than a few
// hundred requests is little more than the maximum) and the error count,
// then the ratios relay/baseline:
//
//   - ratio req/s below 1: the relay serves fewer requests per second than
//     plain reverse_proxy; 0.80 means 20% less throughput.
//   - ratio p50 and ratio p99 above 1: the relay's answers take longer;
//     1.25 means 25% more time per request at that percentile.
//
// At concurrency 1, req/s is the inverse of the mean latency, so it
// follows stalls (another process taking the CPU) that p50 ignores: a
// req/s ratio far from the inverse of the p50 ratio means the run was
// disturbed.
//
// The relay parses every request, translates it, and converts every
// upstream event back, where reverse_proxy only copies bytes, so ratios
// worse than 1 are the relay's cost on top of a proxy. Ratios at or better
// than 1 are possible too: the relay's client reads a much smaller answer
// (see the size lines) than the baseline's. Absolute figures are not comparable across machines: the client,
// the fake upstream and Caddy share the same CPUs, which the header line
// reports along with the load average at the start and the end. Runs on a
// busy machine (a load average near or above the CPU count) are noisy;
// compare ratios of runs made under similar load, and prefer longer
// durations and more rounds when they disagree. After the table come the
// number of connections the client opened to each site (about the highest
// concurrency when connections are reused; far more means a target closes
// them) and the load average at the end.
//
// # Profiling
//
// The header names Caddy's admin socket, which serves Go's profiles while
// the harness runs, e.g. for a focused streaming run:
//
//	go run ./tests/loadharness -workloads sse -concurrency 32 -duration 60s -rounds 1
//	curl --unix-socket <admin socket> -o caddy.prof 'http://localhost/debug/pprof/profile?seconds=20'
//	go tool pprof -top <caddy binary> caddy.prof
//
// With one round the relay phase runs first, for half the duration.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

func main() {
	os.Exit(mainCode())
}

// mainCode runs the harness and returns the exit status: 0 when every cell
// was measured without errors, 1 on failures or errors, 2 on bad flags.
func mainCode() int {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if err == flag.ErrHelp {
		return 0
	}
	if err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Caddy == "" && os.Getenv("RELAY_CADDY_BIN") == "" {
		bin, err := buildCaddy(os.Stderr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cfg.Caddy = bin
	}
	res, err := run(ctx, cfg, os.Stdout, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if res.failed() {
		return 1
	}
	return 0
}

// buildCaddy has relaytest build the Caddy binary with the relay (into its
// one per-user location, shared with the tests).
func buildCaddy(logw io.Writer) (string, error) {
	tb := &programTB{log: logw}
	defer tb.close()
	var bin string
	if err := tb.do(func() { bin = relaytest.Binary(tb) }); err != nil {
		return "", fmt.Errorf("loadharness: build caddy: %w", err)
	}
	return bin, nil
}

// parseFlags reads the command line into a config. Usage and errors go to
// errw.
func parseFlags(args []string, errw io.Writer) (config, error) {
	fs := flag.NewFlagSet("loadharness", flag.ContinueOnError)
	fs.SetOutput(errw)
	cfg := config{}
	conc := fs.String("concurrency", "1,8", "comma-separated concurrency levels")
	wls := fs.String("workloads", "json,sse", "comma-separated workloads: json, sse")
	sizes := fs.String("sizes", "20KB,200KB,2MB", "comma-separated history sizes (B, KB, MB, KiB, MiB)")
	caches := fs.String("cache", "off,on", "comma-separated relay cache settings: off, on")
	burstSize := fs.String("burst-size", "1MiB", "history size of each burst request")
	fs.DurationVar(&cfg.Duration, "duration", 6*time.Second, "time per target and cell, split over the rounds")
	fs.IntVar(&cfg.Requests, "requests", 100_000, "request cap per target and cell, split over the rounds")
	fs.IntVar(&cfg.Rounds, "rounds", 2, "alternating relay/baseline phases per cell")
	fs.DurationVar(&cfg.Warmup, "warmup", 500*time.Millisecond, "warm-up per target, size, cache setting and workload")
	fs.IntVar(&cfg.WarmupRequests, "warmup-requests", 200, "request cap of each warm-up")
	fs.IntVar(&cfg.Burst, "burst", 100, "concurrent histories of the memory burst (0: no burst)")
	fs.StringVar(&cfg.ProfileDir, "profile", "", "directory for CPU, allocation and blocking profiles (empty: none)")
	fs.DurationVar(&cfg.ProfileTime, "profile-time", 5*time.Second, "length of each CPU and allocation profile")
	fs.StringVar(&cfg.Caddy, "caddy", "", "Caddy binary (default $RELAY_CADDY_BIN, else built from ./caddymodule/cmd/caddy)")
	fs.StringVar(&cfg.LogLevel, "log-level", "INFO", "Caddy's log level")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("loadharness: unexpected arguments %q", fs.Args())
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	levels, err := parseLevels(*conc)
	if err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	cfg.Concurrency = levels
	if cfg.Workloads, err = parseWorkloads(*wls); err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	if cfg.Sizes, err = parseSizes(*sizes); err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	if cfg.Caches, err = parseCaches(*caches); err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	if cfg.BurstSize, err = parseSize(*burstSize); err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	if err := cfg.validate(); err != nil {
		fmt.Fprintln(errw, err)
		return cfg, err
	}
	return cfg, nil
}

// parseLevels parses "1,32" into distinct concurrency levels in the given
// order.
func parseLevels(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("loadharness: -concurrency: %q is not a number", f)
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("loadharness: -concurrency needs at least one level")
	}
	return out, nil
}
