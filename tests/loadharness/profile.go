package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// profileTop is how many entries of each profile the report prints.
const profileTop = 15

// wrappers are the frames the cumulative views hide (their time goes to
// the callers shown): net/http's and Caddy's handler chain, which sit
// above every request and would fill the top entries.
const wrappers = `-hide=^(net/http\.|github\.com/caddyserver/caddy/v2)`

// profileResult is the set of profiles taken of the Caddy process while it
// served one kind of load.
type profileResult struct {
	Name     string // e.g. "20KB replay hits" or "burst"
	Requests int    // relay requests answered while the profiles ran
	Hits     int    // of their upstream requests, verified replay hits
	Files    []profileFile
	Err      string // why the profiles are missing, if they are
}

// profileFile is one profile written to the profile directory with the
// top entries of one view of it.
type profileFile struct {
	View string // e.g. "cpu flat", "sync blocking (from the trace), cum"
	Path string
	Top  string // go tool pprof -top output, or why there is none
}

// profileKinds are the views the report prints: which file, which pprof
// options. Caddy serves /debug/pprof/ on its admin endpoint but neither it
// nor the relay sets runtime.SetBlockProfileRate or
// SetMutexProfileFraction, so /debug/pprof/block and /mutex are empty;
// blocking comes from a runtime trace instead (go tool trace -pprof=sync
// and =syscall: channel, mutex and select waits, and system calls such as
// the ledger's fsyncs). The sync view keeps only waits inside the relay's
// requests (under Handler.ServeHTTP): the ledger's writer and maintenance
// loops wait for work most of the time, which says nothing about latency.
var profileKinds = []struct {
	view, file string
	args       []string
}{
	{"cpu, flat", "cpu.pprof", nil},
	{"cpu, cumulative, handler chain hidden", "cpu.pprof", []string{"-cum", wrappers}},
	{"allocated bytes, flat", "allocs.pprof", []string{"-sample_index=alloc_space"}},
	{"sync blocking inside relay requests (from the trace), cumulative", "sync.pprof",
		[]string{"-cum", `-focus=caddymodule\.\(\*Handler\)\.ServeHTTP$`, wrappers}},
	{"syscall blocking (from the trace), cumulative", "syscall.pprof", []string{"-cum", wrappers, "-ignore=^runtime/pprof"}},
}

// fetchProfile saves the admin endpoint's path (e.g.
// /debug/pprof/profile?seconds=5) of c to file.
func fetchProfile(ctx context.Context, c *relaytest.Caddy, path, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://admin"+path, nil)
	if err != nil {
		return fmt.Errorf("loadharness: profile %s: %w", path, err)
	}
	resp, err := c.AdminClient().Do(req)
	if err != nil {
		return fmt.Errorf("loadharness: profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("loadharness: profile %s: status %d: %s", path, resp.StatusCode, bytes.TrimSpace(msg))
	}
	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("loadharness: profile %s: %w", path, err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("loadharness: profile %s: %w", path, err)
	}
	return f.Close()
}

// collectProfiles takes, while load runs, a CPU profile, an allocation
// profile and a runtime trace over the same d, writes them to dir with the
// prefix and derives the sync and syscall blocking profiles from the
// trace. load is called once and must return when its context is
// cancelled.
func collectProfiles(ctx context.Context, c *relaytest.Caddy, dir, prefix string, d time.Duration, load func(context.Context)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("loadharness: profile directory: %w", err)
	}
	lctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		load(lctx)
	}()
	defer func() {
		stop()
		wg.Wait()
	}()
	secs := max(int(d/time.Second), 1)
	file := func(name string) string { return filepath.Join(dir, prefix+"-"+name) }
	errs := make([]error, 3)
	var pw sync.WaitGroup
	for i, p := range []struct{ path, file string }{
		{fmt.Sprintf("/debug/pprof/profile?seconds=%d", secs), "cpu.pprof"},
		{fmt.Sprintf("/debug/pprof/allocs?seconds=%d", secs), "allocs.pprof"},
		{fmt.Sprintf("/debug/pprof/trace?seconds=%d", secs), "trace.out"},
	} {
		pw.Add(1)
		go func() {
			defer pw.Done()
			errs[i] = fetchProfile(ctx, c, p.path, file(p.file))
		}()
	}
	pw.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	stop()
	wg.Wait()
	for _, kind := range []string{"sync", "syscall"} {
		out, err := exec.CommandContext(ctx, "go", "tool", "trace", "-pprof="+kind, file("trace.out")).Output()
		if err != nil {
			return fmt.Errorf("loadharness: go tool trace -pprof=%s: %w", kind, err)
		}
		if err := os.WriteFile(file(kind+".pprof"), out, 0o644); err != nil {
			return fmt.Errorf("loadharness: %w", err)
		}
	}
	return nil
}

// topViews runs go tool pprof -top for every view of the profiles with the
// given prefix in dir.
func topViews(ctx context.Context, bin, dir, prefix string) []profileFile {
	var out []profileFile
	for _, k := range profileKinds {
		path := filepath.Join(dir, prefix+"-"+k.file)
		args := append([]string{"tool", "pprof", "-top", fmt.Sprintf("-nodecount=%d", profileTop)}, k.args...)
		args = append(args, bin, path)
		raw, err := exec.CommandContext(ctx, "go", args...).CombinedOutput()
		top := trimPprofHeader(string(raw))
		if err != nil {
			top = fmt.Sprintf("go tool pprof failed: %v\n%s", err, top)
		}
		out = append(out, profileFile{View: k.view, Path: path, Top: top})
	}
	return out
}

// trimPprofHeader drops the lines of go tool pprof -top that name the
// file, build and time, which the report says elsewhere, and its note that
// an -ignore matched nothing (the profiler's own writer does not always
// show up).
func trimPprofHeader(s string) string {
	var keep []string
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.HasPrefix(line, "File: ") || strings.HasPrefix(line, "Build ID: ") ||
			strings.HasPrefix(line, "Time: ") || strings.HasPrefix(line, "Main binary filename") ||
			line == "Ignore expression matched no samples" {
			continue
		}
		keep = append(keep, line)
	}
	return strings.Join(keep, "\n")
}

// profileHits profiles the cache-on relay while one client sends replay
// hits of conv back to back, JSON and SSE in turn (a single hit is too
// short for a CPU profile at 100 Hz; the profiles cover as many hits as
// the profile time holds).
func profileHits(ctx context.Context, client *http.Client, st *stack, bin string, conv *conversation, size historySize, cfg config) profileResult {
	res := profileResult{Name: size.label + " replay hits, one client, JSON and SSE alternating"}
	var targets [2]*target
	for i, stream := range []bool{false, true} {
		body, err := chatBody(conv.messages, stream)
		if err != nil {
			res.Err = err.Error()
			return res
		}
		h := http.Header{}
		h.Set("Content-Type", "application/json")
		h.Set("Authorization", "Bearer "+relayToken)
		targets[i] = &target{name: "relay", relay: true, stream: stream, url: st.relayURL + "/v1/chat/completions",
			header: h, bodies: [][]byte{body}}
	}
	var n, errs atomic.Int64
	load := func(lctx context.Context) {
		checkers := [2]checker{newChecker(true, false), newChecker(true, true)}
		for i := 0; lctx.Err() == nil; i++ {
			t := targets[i%2]
			if _, err := do(lctx, client, t, t.bodies[0], checkers[i%2]); err != nil {
				if lctx.Err() == nil {
					errs.Add(1)
				}
				continue
			}
			n.Add(1)
		}
	}
	st.fake.Reset()
	prefix := strings.ToLower(size.label)
	err := collectProfiles(ctx, st.caddy, cfg.ProfileDir, prefix, cfg.ProfileTime, load)
	tally := tallyFake(st.fake, newReplayIndex([]*conversation{conv}))
	st.fake.Reset()
	res.Requests, res.Hits = int(n.Load()), tally.Hits
	switch {
	case err != nil:
		res.Err = err.Error()
	case errs.Load() > 0:
		res.Err = fmt.Sprintf("loadharness: %s profile: %d requests failed", size.label, errs.Load())
	default:
		res.Files = topViews(ctx, bin, cfg.ProfileDir, prefix)
	}
	return res
}

// printProfile writes the top entries of every view of p.
func printProfile(w io.Writer, p profileResult) {
	fmt.Fprintf(w, "\n== profiles: %s: %d requests, %d verified replay hits upstream\n", p.Name, p.Requests, p.Hits)
	if p.Err != "" {
		fmt.Fprintf(w, "no profiles: %s\n", p.Err)
	}
	for _, f := range p.Files {
		fmt.Fprintf(w, "-- %s (%s)\n%s\n", f.View, f.Path, f.Top)
	}
}
