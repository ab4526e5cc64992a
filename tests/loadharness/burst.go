package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// burstSettle is how long the burst waits after building its
// conversations before it reads the RSS, so that the process is idle.
const burstSettle = 2 * time.Second

// burstResult is what the memory burst measured.
type burstResult struct {
	Clients  int         // concurrent requests, one conversation each
	Streamed int         // of those, SSE
	Size     historySize // of each history
	PID      int
	Before   memStatus     // just before the burst (Peak: since Caddy started)
	PeakSet  bool          // the high-water mark was reset to the RSS before the burst
	Peak     int64         // VmHWM after the burst: the burst's peak when PeakSet
	After    memStatus     // just after the burst
	Elapsed  time.Duration // from the release of the requests to the last answer
	Latency  stats         // of the burst's successful requests (ReqPerS unset)
	OK       int           // successful requests
	Errors   int
	FirstErr string
	Replay   replayTally
	Profile  *profileResult // a second, profiled burst (-profile)
}

// runBurst starts a fresh cache-on Caddy, builds cfg.Burst conversations
// of cfg.BurstSize through it, then releases one request per conversation
// at once (every second one streamed) and measures the process's RSS
// before and its peak during the burst. With cfg.ProfileDir it then
// profiles bursts sent one after another.
func runBurst(ctx context.Context, tb *programTB, fake *fakeupstream.Server, upURL, bin string, cfg config, out io.Writer) (*burstResult, error) {
	st, err := startStack(tb, fake, upURL, cfg.LogLevel, true)
	if err != nil {
		return nil, err
	}
	defer st.caddy.Stop()
	client := newClient(cfg.Burst, &dialCounter{})
	defer client.CloseIdleConnections()

	start := time.Now()
	b := &builder{client: client, url: st.relayURL + "/v1/chat/completions", fake: fake, name: "cache-on"}
	convs, err := b.buildAll(ctx, "lhburst", cfg.Burst, cfg.BurstSize.bytes)
	if err != nil {
		return nil, err
	}
	fake.Reset()
	fmt.Fprintf(out, "\nburst: %d conversations of %s (%d earlier assistant turns) built through a fresh cache-on Caddy (pid %d) in %s\n",
		len(convs), cfg.BurstSize.label, earlierTurns, st.caddy.PID(), time.Since(start).Round(time.Millisecond))
	targets, err := burstTargets(st, convs)
	if err != nil {
		return nil, err
	}
	ix := newReplayIndex(convs)

	r := &burstResult{Clients: len(convs), Streamed: len(convs) / 2, Size: cfg.BurstSize, PID: st.caddy.PID()}
	select {
	case <-time.After(burstSettle):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if r.Before, err = readMemStatus(r.PID); err != nil {
		return nil, err
	}
	r.PeakSet = resetPeak(r.PID) == nil
	var lat sample
	snaps := burstHeapSnapshots(ctx, st, cfg.ProfileDir)
	r.OK, r.Errors, r.FirstErr, r.Elapsed = fireBurst(ctx, client, targets, &lat)
	snaps()
	r.Latency = summarize(&lat)
	if r.After, err = readMemStatus(r.PID); err != nil {
		return nil, err
	}
	r.Peak = r.After.Peak
	r.Replay = tallyFake(fake, ix)
	fake.Reset()
	printBurst(out, r)

	if cfg.ProfileDir != "" {
		p := profileResult{Name: fmt.Sprintf("bursts of %d %s histories, half streamed, one after another", len(convs), cfg.BurstSize.label)}
		load := func(lctx context.Context) {
			for lctx.Err() == nil {
				ok, _, _, _ := fireBurst(lctx, client, targets, nil)
				p.Requests += ok
			}
		}
		if err := collectProfiles(ctx, st.caddy, cfg.ProfileDir, "burst", cfg.ProfileTime, load); err != nil {
			p.Err = err.Error()
		} else {
			p.Hits = tallyFake(fake, ix).Hits
			p.Files = topViews(ctx, bin, cfg.ProfileDir, "burst")
		}
		fake.Reset()
		r.Profile = &p
	}
	return r, nil
}

// burstHeapTimes are the moments after the release of the measured burst
// at which burstHeapSnapshots saves the heap of Caddy.
var burstHeapTimes = []time.Duration{400 * time.Millisecond, 800 * time.Millisecond, 1200 * time.Millisecond}

// burstHeapSnapshots saves, when dir is set, heap and goroutine profiles of the
// Caddy of st at burstHeapTimes into dir (burst-heap-<ms>ms.pprof,
// burst-goroutine-<ms>ms.pprof), so that what is
// live per request near the peak can be read with
// go tool pprof -sample_index=inuse_space. The returned function waits for
// the snapshots; errors are logged to no one: a missing file says enough.
func burstHeapSnapshots(ctx context.Context, st *stack, dir string) (wait func()) {
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return func() {}
	}
	var wg sync.WaitGroup
	start := time.Now()
	for _, at := range burstHeapTimes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(at - time.Since(start)):
			case <-ctx.Done():
				return
			}
			file := filepath.Join(dir, fmt.Sprintf("burst-%%s-%dms.pprof", at.Milliseconds()))
			_ = fetchProfile(ctx, st.caddy, "/debug/pprof/heap", fmt.Sprintf(file, "heap"))
			_ = fetchProfile(ctx, st.caddy, "/debug/pprof/goroutine", fmt.Sprintf(file, "goroutine"))
		}()
	}
	return wg.Wait
}

// burstTargets gives every conversation its own target: even ones JSON,
// odd ones SSE.
func burstTargets(st *stack, convs []*conversation) ([]*target, error) {
	out := make([]*target, len(convs))
	for i, c := range convs {
		stream := i%2 == 1
		body, err := chatBody(c.messages, stream)
		if err != nil {
			return nil, err
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Authorization", "Bearer "+relayToken)
		out[i] = &target{name: "relay", relay: true, stream: stream, url: st.relayURL + "/v1/chat/completions",
			header: h, bodies: [][]byte{body}}
	}
	return out, nil
}

// fireBurst sends one request to each target at the same moment and waits
// for every answer. It adds the latencies of the successful ones to lat
// unless lat is nil.
func fireBurst(ctx context.Context, client *http.Client, targets []*target, lat *sample) (ok, errs int, firstErr string, elapsed time.Duration) {
	gate := make(chan struct{})
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newChecker(t.relay, t.stream)
			<-gate
			d, err := do(ctx, client, t, t.bodies[0], c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if errs == 0 {
					firstErr = err.Error()
				}
				errs++
				return
			}
			ok++
			if lat != nil {
				lat.latencies = append(lat.latencies, d)
			}
		}()
	}
	// let every goroutine reach the gate
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	close(gate)
	wg.Wait()
	return ok, errs, firstErr, time.Since(start)
}

// printBurst writes the burst's figures.
func printBurst(w io.Writer, r *burstResult) {
	fmt.Fprintf(w, "burst: %d concurrent %s histories (%d JSON, %d SSE), cache on, default settings: %d ok, %d errors in %s; latency p50 %s, p99 %s\n",
		r.Clients, r.Size.label, r.Clients-r.Streamed, r.Streamed, r.OK, r.Errors, r.Elapsed.Round(time.Millisecond), ms(r.Latency.P50), ms(r.Latency.P99))
	peak := "peak RSS during the burst " + mib(r.Peak)
	if !r.PeakSet {
		peak = "peak RSS since Caddy started (the high-water mark could not be reset) " + mib(r.Peak)
	}
	fmt.Fprintf(w, "burst: RSS before %s (peak before %s); %s; RSS after %s\n",
		mib(r.Before.RSS), mib(r.Before.Peak), peak, mib(r.After.RSS))
	fmt.Fprintf(w, "burst: verified replay hits %d of %d (%.1f%%); upstream requests %d, partial %d, not their own %d, rejected %d\n",
		r.Replay.Hits, r.OK, replayPercent(r.Replay.Hits, r.OK), r.Replay.Upstream, r.Replay.Partial, r.Replay.Wrong, r.Replay.Rejected)
	if r.Errors > 0 {
		fmt.Fprintf(w, "burst: first error: %s\n", r.FirstErr)
	}
}
