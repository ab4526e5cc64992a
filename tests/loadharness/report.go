package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// stats are the figures of one target in one cell.
type stats struct {
	Requests int           // successful requests
	Errors   int           // non-200 answers, transport errors, answers without their terminal event
	ReqPerS  float64       // successful requests per second of phase wall time
	P50, P99 time.Duration // latency percentiles of successful requests (nearest rank)
	FirstErr string        // the first error seen, for diagnosis
}

// cellResult is one row of the table: a history size, cache setting and
// workload at one concurrency.
type cellResult struct {
	Size        string // label of the history size, e.g. "20KB"
	Cache       bool   // the relay ran with the reasoning cache
	Workload    string
	Concurrency int
	Relay       stats
	Baseline    stats
	Replay      replayTally // what the relay's upstream requests replayed
}

// addedP50 is how much longer the relay's median request took than the
// baseline's.
func (c cellResult) addedP50() time.Duration { return c.Relay.P50 - c.Baseline.P50 }

// replayPct is the share of the relay's successful requests whose upstream
// request was a verified replay hit, in percent.
func (c cellResult) replayPct() float64 { return replayPercent(c.Replay.Hits, c.Relay.Requests) }

// Ratios relay/baseline. A req/s ratio below 1 and latency ratios above 1
// mean the relay costs more than plain reverse_proxy; NaN when the
// baseline figure is zero.
func (c cellResult) ratios() (rps, p50, p99 float64) {
	return ratio(c.Relay.ReqPerS, c.Baseline.ReqPerS),
		ratio(float64(c.Relay.P50), float64(c.Baseline.P50)),
		ratio(float64(c.Relay.P99), float64(c.Baseline.P99))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// summarize turns a sample into stats.
func summarize(s *sample) stats {
	st := stats{Requests: len(s.latencies), Errors: s.errors, FirstErr: s.firstErr}
	if s.elapsed > 0 {
		st.ReqPerS = float64(len(s.latencies)) / s.elapsed.Seconds()
	}
	slices.Sort(s.latencies)
	st.P50 = percentile(s.latencies, 0.50)
	st.P99 = percentile(s.latencies, 0.99)
	return st
}

// percentile returns the nearest-rank q-quantile of sorted, 0 when empty.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// header describes the run; it is printed before the table.
type header struct {
	GoVersion  string
	OSArch     string
	GOMAXPROCS int
	NumCPU     int
	Caddy      string
	Admins     []string // one line per Caddy process
	LoadStart  string
	Duration   time.Duration
	Requests   int
	Rounds     int
	Warmup     time.Duration
	WarmupReqs int
}

// printHeader writes the description of the run.
func printHeader(w io.Writer, h header) {
	fmt.Fprintf(w, "reasoning_relay vs plain reverse_proxy in the same Caddy process, one in-process fake upstream, loopback only\n")
	fmt.Fprintf(w, "harness: %s %s, GOMAXPROCS=%d, NumCPU=%d (client, fake upstream and Caddy share these)\n",
		h.GoVersion, h.OSArch, h.GOMAXPROCS, h.NumCPU)
	fmt.Fprintf(w, "caddy: %s\n", h.Caddy)
	for _, a := range h.Admins {
		fmt.Fprintf(w, "caddy %s\n", a)
	}
	fmt.Fprintf(w, "per target and cell: at most %s and %d requests, in %d alternating rounds\n",
		h.Duration, h.Requests, h.Rounds)
	fmt.Fprintf(w, "warm-up per target, size, cache setting and workload: at most %s and %d requests\n", h.Warmup, h.WarmupReqs)
	fmt.Fprintf(w, "load average at start: %s\n", h.LoadStart)
}

// tableColumns is the table's header line. Its columns are a stable
// format (see the package documentation); add new ones at the end.
const tableColumns = "size\tcache\tworkload\tconc\t" +
	"relay n\treq/s\tp50\tp99\terr\t" +
	"proxy n\treq/s\tp50\tp99\terr\t" +
	"p50 ratio\tadded p50\treq/s ratio\treplay\t"

// printTable writes one row per cell with both targets' figures, the
// relay/proxy ratios and the verified replay share, then a line for every
// cell with errors or replays that were not full hits.
func printTable(w io.Writer, cells []cellResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, tableColumns)
	for _, c := range cells {
		rps, p50, _ := c.ratios()
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%d\t%.2fx\t%s\t%.2fx\t%.1f%%\t\n",
			c.Size, cacheName(c.Cache), c.Workload, c.Concurrency,
			c.Relay.Requests, c.Relay.ReqPerS, ms(c.Relay.P50), ms(c.Relay.P99), c.Relay.Errors,
			c.Baseline.Requests, c.Baseline.ReqPerS, ms(c.Baseline.P50), ms(c.Baseline.P99), c.Baseline.Errors,
			p50, signedMS(c.addedP50()), rps, c.replayPct())
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("loadharness: write table: %w", err)
	}
	for _, c := range cells {
		name := fmt.Sprintf("%s cache %s %s c=%d", c.Size, cacheName(c.Cache), c.Workload, c.Concurrency)
		for _, t := range []struct {
			name string
			st   stats
		}{{"relay", c.Relay}, {"proxy", c.Baseline}} {
			if t.st.Errors > 0 {
				fmt.Fprintf(w, "%s %s: %d errors, first: %s\n", name, t.name, t.st.Errors, t.st.FirstErr)
			}
		}
		if r := c.Replay; r.Partial+r.Wrong+r.Rejected > 0 || (c.Cache && r.Hits < c.Relay.Requests) {
			fmt.Fprintf(w, "%s: of %d upstream requests %d replayed every earlier turn, %d some, %d reasoning not their own; the fake rejected %d\n",
				name, r.Upstream, r.Hits, r.Partial, r.Wrong, r.Rejected)
		}
	}
	return nil
}

// signedMS formats a latency difference in milliseconds with its sign.
func signedMS(d time.Duration) string {
	return fmt.Sprintf("%+.3fms", float64(d)/float64(time.Millisecond))
}

// ms formats a latency in milliseconds with three decimals.
func ms(d time.Duration) string {
	return fmt.Sprintf("%.3fms", float64(d)/float64(time.Millisecond))
}

// loadAverage returns the 1, 5 and 15 minute load averages from
// /proc/loadavg, or "unavailable" where there is no such file.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unavailable"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unavailable"
	}
	return strings.Join(f[:3], " ")
}
