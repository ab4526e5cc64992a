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

// cellResult is one row of the table: a workload at one concurrency.
type cellResult struct {
	Workload    string
	Concurrency int
	Relay       stats
	Baseline    stats
}

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
	Admin      string
	LoadStart  string
	Duration   time.Duration
	Requests   int
	Rounds     int
	Warmup     time.Duration
	WarmupReqs int
}

// printHeader writes the description of the run.
func printHeader(w io.Writer, h header) {
	fmt.Fprintf(w, "reasoning_relay vs plain reverse_proxy: one Caddy, one in-process fake upstream, loopback only\n")
	fmt.Fprintf(w, "harness: %s %s, GOMAXPROCS=%d, NumCPU=%d (client, fake upstream and Caddy share these)\n",
		h.GoVersion, h.OSArch, h.GOMAXPROCS, h.NumCPU)
	fmt.Fprintf(w, "caddy: %s, admin socket %s\n", h.Caddy, strings.TrimPrefix(h.Admin, "unix/"))
	fmt.Fprintf(w, "per target and cell: at most %s and %d requests, in %d alternating rounds\n",
		h.Duration, h.Requests, h.Rounds)
	fmt.Fprintf(w, "warm-up per target and workload: at most %s and %d requests\n", h.Warmup, h.WarmupReqs)
	fmt.Fprintf(w, "load average at start: %s\n", h.LoadStart)
}

// printTable writes one row per cell with both targets' figures and the
// relay/baseline ratios.
func printTable(w io.Writer, cells []cellResult) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tconc\t"+
		"relay n\treq/s\tp50\tp99\terr\t"+
		"baseline n\treq/s\tp50\tp99\terr\t"+
		"ratio req/s\tratio p50\tratio p99\t")
	for _, c := range cells {
		rps, p50, p99 := c.ratios()
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f\t%s\t%s\t%d\t%d\t%.1f\t%s\t%s\t%d\t%.3f\t%.3f\t%.3f\t\n",
			c.Workload, c.Concurrency,
			c.Relay.Requests, c.Relay.ReqPerS, ms(c.Relay.P50), ms(c.Relay.P99), c.Relay.Errors,
			c.Baseline.Requests, c.Baseline.ReqPerS, ms(c.Baseline.P50), ms(c.Baseline.P99), c.Baseline.Errors,
			rps, p50, p99)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("loadharness: write table: %w", err)
	}
	for _, c := range cells {
		for _, t := range []struct {
			name string
			st   stats
		}{{"relay", c.Relay}, {"baseline", c.Baseline}} {
			if t.st.Errors > 0 {
				fmt.Fprintf(w, "%s c=%d %s: %d errors, first: %s\n", c.Workload, c.Concurrency, t.name, t.st.Errors, t.st.FirstErr)
			}
		}
	}
	return nil
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
