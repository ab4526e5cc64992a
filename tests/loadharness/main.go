// Command loadharness measures the reasoning relay against plain Caddy
// reverse_proxy in the same Caddy process and in front of the same fake
// Responses upstream, on Cursor-sized histories, with the reasoning cache
// off and on, and prints one table of latency and throughput ratios with
// the share of verified replay hits, the Caddy process's memory under a
// burst, and optionally profiles. It is a program, not part of
// `go test ./...`: run it by hand, on a machine as quiet as you can get.
//
//	go run ./tests/loadharness                         # issue 14's table and burst, 6 to 7 minutes on 2 cores
//	go run ./tests/loadharness -profile /tmp/lh-prof   # the same plus profiles, about 30 s more
//	go run ./tests/loadharness -duration 30s -rounds 4 # a longer, steadier run (about 25 minutes)
//	go run ./tests/loadharness -sizes 200KB -cache on -workloads sse -concurrency 8 -burst 0
//	go run ./tests/loadharness -sizes none -profile /tmp/lh-burst  # the memory burst alone, about 40 s
//
// Flags:
//
//	-sizes 20KB,200KB,2MB  history sizes (B, KB, MB, KiB, MiB): the size of the
//	                    final Chat Completions request, within a few percent;
//	                    none measures no table, only the burst
//	-cache off,on       relay settings to measure: off (no reasoning_cache) and
//	                    on (reasoning_cache enabled, default settings, ledger
//	                    in a temporary directory)
//	-workloads json,sse which workloads to measure (stream false / true)
//	-concurrency 1,8    concurrency levels, one conversation per client
//	-duration 6s        time per target and cell (split over the rounds)
//	-requests 100000    request cap per target and cell (split over the rounds)
//	-rounds 2           alternating relay/baseline phases per cell
//	-warmup 500ms       warm-up per target, size, cache setting and workload,
//	                    at the highest concurrency
//	-warmup-requests 200  request cap of each warm-up
//	-burst 100          concurrent histories of the memory burst; 0 skips it
//	-burst-size 1MiB    the size of each burst history
//	-profile DIR        collect profiles into DIR and print their top entries
//	-profile-time 5s    length of each profile
//	-caddy PATH         the Caddy binary to use (default: $RELAY_CADDY_BIN,
//	                    else one built from ./caddymodule/cmd/caddy)
//	-log-level INFO     Caddy's log level (DEBUG logs every relay request,
//	                    which the baseline does not: keep INFO for figures)
//
// # What runs
//
// One fake Responses upstream (tests/fakeupstream, an httptest server on
// 127.0.0.1 inside this process) and one Caddy process per cache setting,
// each with two sites on two loopback ports: the relay (reasoning_relay
// pointed at the fake; the cache-on process also runs the reasoning_cache
// app, which is process-wide) and the baseline (reverse_proxy to the fake,
// flush_interval -1 so server-sent events stream through, header_up
// swapping the client's token for the upstream key as the relay does).
// The relay and its baseline share one Caddy runtime.
//
// For each history size the harness builds one conversation per client of
// the highest concurrency, through the cache-on relay: a system prompt,
// then five rounds of a user request that the fake answers with a
// read_file call, the file's content as the tool result (the bulk of the
// size) and the fake's answer to it, then a final question. Each of those
// ten assistant turns carries reasoning the cache recorded and can replay.
// The measured request is the final question with the whole history, sent
// again and again; the fake answers it with a short text, with reasoning.
//
// Before measuring a size, cache setting and workload, the harness sends
// each client's request once through that relay and keeps the Responses
// request the fake received as that client's baseline body, so the proxy
// carries exactly the bytes the relay sent upstream (with the cache on,
// the ten replayed reasoning items included) and the upstream does the
// same work for both. Every answer is read to its end: JSON must be
// complete, a relay stream must end in "data: [DONE]" and a baseline
// stream must contain "event: response.completed". Anything else, a
// non-200 status or a transport error is counted as an error.
//
// Each cell (size, cache setting, workload, concurrency) runs in rounds
// that alternate which target goes first (relay, baseline, baseline,
// relay, ...), so that other work on the shared machine hits both alike.
// Each phase is bounded both by time and by a request count; all traffic
// goes to 127.0.0.1 and the program stops by itself (or on Ctrl-C,
// stopping Caddy).
//
// # Verified replay
//
// After every relay phase the harness reads what the fake upstream
// recorded. The fake accepts only reasoning it issued and reports which
// response issued each replayed item, so a request counts as a replay hit
// only when it carried the reasoning of all ten earlier turns of its own
// conversation (found by the tag that starts its final question), in
// order. Reasoning of another conversation or out of order is counted as
// wrong (the run then fails); upstream requests the fake rejected and
// requests that replayed only some turns are listed under the table.
//
// # Reading the report
//
// The header names the Go version, GOMAXPROCS and CPU count, the Caddy
// binary, each Caddy process's pid and admin socket, the bounds, and the
// load average at the start. For each size a line says how long building
// its conversations took; for each size, cache setting and workload a line
// gives the sizes of client 0's request and answer bodies for both targets
// (the baseline's client receives the Responses wire format, encrypted
// reasoning included, where the relay's receives the smaller Chat format)
// and how many clients' probe requests were replay hits.
//
// Then comes the table, one row per cell, with these columns (a stable
// format; new columns are added at the end):
//
//	size, cache, workload, conc   the cell
//	relay n, req/s, p50, p99, err the relay: successful requests, their rate
//	                              over the phases' wall time, latency
//	                              percentiles (request sent until the last
//	                              byte of the answer was read; nearest rank),
//	                              errors
//	proxy n, req/s, p50, p99, err the same for the reverse_proxy baseline
//	p50 ratio                     relay p50 / proxy p50 ("1.26x": the relay's
//	                              median request takes 26% longer)
//	added p50                     relay p50 - proxy p50 ("+0.270ms")
//	req/s ratio                   relay req/s / proxy req/s ("0.16x": the
//	                              relay serves 16% of the proxy's rate)
//	replay                        verified replay hits / successful relay
//	                              requests (0.0% with the cache off)
//
// Lines after the table list cells with errors and cache-on cells whose
// requests did not all replay. At concurrency 1, req/s is the inverse of
// the mean latency, so it follows stalls (another process taking the CPU)
// that p50 ignores: a req/s ratio far from the inverse of the p50 ratio
// means the run was disturbed. A p99 of fewer than a few hundred requests
// is little more than the maximum.
//
// The relay parses every request, translates it, and converts every
// upstream event back, where reverse_proxy only copies bytes, so ratios
// worse than 1 are the relay's cost on top of a proxy. Absolute figures
// are not comparable across machines: the client, the fake upstream and
// Caddy share the same CPUs. Runs on a busy machine (a load average near or
// above the CPU count) are noisy; compare ratios of runs made under similar
// load, and prefer longer durations and more rounds when they disagree.
// After the table come the number of connections the client opened to each
// site (about the highest concurrency when connections are reused; far more
// means a target closes them) and the load average.
//
// # Memory burst
//
// With -burst N (default 100) the harness starts a fresh cache-on Caddy,
// builds N conversations of -burst-size through it, waits two seconds,
// reads the process's RSS (VmRSS in /proc/<pid>/status), resets its
// high-water mark (writing 5 to /proc/<pid>/clear_refs) and releases one
// request per conversation at the same moment, every second one streamed.
// It prints the RSS before, the peak during the burst (VmHWM after it; if
// the mark could not be reset, the peak since Caddy started, and it says
// so), the RSS after, the errors and the verified replay hits.
//
// # Profiles
//
// With -profile DIR, after the cells of each size the harness has one
// client send that size's replay hits through the cache-on relay back to
// back, JSON and SSE in turn (one hit is too short for a 100 Hz CPU
// profile), and meanwhile takes from Caddy's admin endpoint a CPU profile
// (/debug/pprof/profile), an allocation profile (/debug/pprof/allocs, the
// difference over the same time) and a runtime trace (/debug/pprof/trace),
// all over -profile-time. Caddy serves /debug/pprof/block and /mutex, but
// neither Caddy nor the relay calls runtime.SetBlockProfileRate or
// SetMutexProfileFraction, so those would be empty; the harness derives
// blocking profiles from the trace instead (go tool trace -pprof=sync:
// channel, mutex and select waits; -pprof=syscall: system calls such as
// the ledger's fsyncs). After the burst it profiles bursts sent one after
// another the same way. The files are <size>-cpu.pprof, -allocs.pprof,
// -trace.out, -sync.pprof and -syscall.pprof (burst-... for the burst); the
// report prints go tool pprof -top of each: CPU flat and cumulative
// (net/http's and Caddy's handler chain hidden), allocated bytes, the
// sync blocking inside relay requests (the ledger's idle loops left out)
// and syscall blocking. Look further with e.g.
//
//	go tool pprof -top -cum -focus reasoningcache <caddy binary> DIR/2mb-cpu.pprof
//	go tool pprof -http :8080 <caddy binary> DIR/2mb-cpu.pprof
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
