package main

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// sample is what one target accumulated over the phases of one cell.
type sample struct {
	latencies []time.Duration // of successful requests
	elapsed   time.Duration   // summed wall time of the phases
	errors    int
	firstErr  string
}

// phase sends requests to t from conc workers, each waiting for its
// previous answer, until max requests have been started or d has passed,
// whichever comes first; requests in flight at the deadline are finished.
// It adds the results to into.
func phase(ctx context.Context, client *http.Client, t *target, conc, max int, d time.Duration, into *sample) {
	if max <= 0 || conc <= 0 || len(t.bodies) == 0 {
		return
	}
	var started atomic.Int64
	type result struct {
		lat      []time.Duration
		errors   int
		firstErr string
	}
	results := make([]result, conc)
	start := time.Now()
	deadline := start.Add(d)
	var wg sync.WaitGroup
	for i := range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &results[i]
			r.lat = make([]time.Duration, 0, min(max/conc+1, 1<<14))
			c := newChecker(t.relay, t.stream)
			body := t.bodies[i%len(t.bodies)]
			for ctx.Err() == nil && time.Now().Before(deadline) && started.Add(1) <= int64(max) {
				lat, err := do(ctx, client, t, body, c)
				if err != nil {
					if r.errors == 0 {
						r.firstErr = err.Error()
					}
					r.errors++
					continue
				}
				r.lat = append(r.lat, lat)
			}
		}()
	}
	wg.Wait()
	into.elapsed += time.Since(start)
	for _, r := range results {
		into.latencies = append(into.latencies, r.lat...)
		into.errors += r.errors
		if into.firstErr == "" {
			into.firstErr = r.firstErr
		}
	}
}

// dialCounter counts the client's TCP connections per address, to show
// that the load generator reuses its connections (and to expose a target
// that closes them).
type dialCounter struct {
	dialer net.Dialer
	mu     sync.Mutex
	n      map[string]int
}

func (d *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	d.mu.Lock()
	if d.n == nil {
		d.n = make(map[string]int)
	}
	d.n[addr]++
	d.mu.Unlock()
	return d.dialer.DialContext(ctx, network, addr)
}

// count returns how many connections were dialed to the host of baseURL.
func (d *dialCounter) count(baseURL string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[strings.TrimPrefix(baseURL, "http://")]
}

// newClient returns the load generator's HTTP client: plain HTTP/1.1 over
// loopback with enough idle connections per host that no worker needs to
// dial again after the warm-up, and no transparent decompression.
func newClient(maxConc int, dials *dialCounter) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dials.dial,
			MaxIdleConns:        2*maxConc + 8,
			MaxIdleConnsPerHost: maxConc + 4,
			IdleConnTimeout:     5 * time.Minute,
			DisableCompression:  true,
			ForceAttemptHTTP2:   false,
		},
		Timeout: 60 * time.Second,
	}
}
