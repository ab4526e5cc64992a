package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// Credentials of the harness's private stack. They only ever travel over
// loopback between the harness, its Caddy and its fake upstream.
const (
	upstreamKey = "sk-loadharness-upstream"
	relayToken  = "loadharness-relay-token"
	// relayModel is the model the chat requests name: an alias, as Cursor
	// users configure them, so the relay resolves it on every request.
	relayModel = "cursor-load"
)

// relaySite configures the relay site: %s is the fake upstream's URL.
const relaySite = `	reasoning_relay {
		upstream %s/v1
		api_key {env.LH_UPSTREAM_KEY}
		relay_token {env.LH_RELAY_TOKEN}
		model_alias ` + relayModel + ` gpt-5.2 effort low summary auto
	}`

// baselineSite configures the baseline site: plain reverse_proxy to the
// same fake upstream, swapping the client's token for the upstream key as
// the relay does, and streaming SSE through unbuffered. %s is the fake's URL.
const baselineSite = `	reverse_proxy %s {
		flush_interval -1
		header_up Authorization "Bearer {env.LH_UPSTREAM_KEY}"
	}`

// cacheGlobal enables the reasoning cache with its default settings and
// the ledger in the instance's temporary directory.
const cacheGlobal = `	reasoning_cache {
		database {DIR}/data/ledger.sqlite
		enabled true
	}`

// stack is one Caddy process serving the relay and the baseline on two
// loopback ports, in front of the shared fake upstream. The cache-off and
// the cache-on relay are two stacks: the reasoning cache is an app of the
// whole process.
type stack struct {
	cache       bool // the process runs the reasoning cache
	fake        *fakeupstream.Server
	caddy       *relaytest.Caddy
	relayURL    string // base URL of the relay site
	baselineURL string // base URL of the baseline site
}

// startUpstream starts the fake upstream every stack talks to; a cleanup
// registered on tb stops it.
func startUpstream(tb *programTB) (*fakeupstream.Server, string) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	srv := httptest.NewServer(fake)
	tb.Cleanup(srv.Close)
	return fake, srv.URL
}

// startStack starts one Caddy process, with the reasoning cache when cache
// is set, in front of the fake at upstreamURL. A cleanup registered on tb
// stops it.
func startStack(tb *programTB, fake *fakeupstream.Server, upstreamURL, logLevel string, cache bool) (*stack, error) {
	s := &stack{cache: cache, fake: fake}
	global := ""
	if cache {
		global = cacheGlobal
	}
	err := tb.do(func() {
		basePort := relaytest.FreePort(tb)
		// Both sites run in the same Caddy process, so they share its
		// runtime, GC and CPU budget.
		s.caddy = relaytest.Start(tb, relaytest.Options{
			Global: global,
			Site:   fmt.Sprintf(relaySite, upstreamURL),
			ExtraSites: fmt.Sprintf("http://127.0.0.1:%d {\n\tbind 127.0.0.1\n", basePort) +
				fmt.Sprintf(baselineSite, upstreamURL) + "\n}\n",
			LogLevel: logLevel,
			Env:      []string{"LH_UPSTREAM_KEY=" + upstreamKey, "LH_RELAY_TOKEN=" + relayToken},
		})
		s.relayURL = s.caddy.BaseURL
		s.baselineURL = fmt.Sprintf("http://127.0.0.1:%d", basePort)
	})
	if err != nil {
		return nil, fmt.Errorf("loadharness: start caddy: %w", err)
	}
	if err := waitListening(s.baselineURL, 10*time.Second); err != nil {
		return nil, fmt.Errorf("loadharness: baseline site: %w\n%s", err, s.caddy.Logs())
	}
	return s, nil
}

// cacheName is how the report names a stack's cache setting.
func cacheName(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// waitListening waits until baseURL accepts TCP connections.
func waitListening(baseURL string, limit time.Duration) error {
	addr := strings.TrimPrefix(baseURL, "http://")
	deadline := time.Now().Add(limit)
	for {
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return conn.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening after %s: %w", addr, limit, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// targets builds the relay and baseline targets of a workload over
// conversations, one per client. For each it sends the chat request once
// through the relay, takes the Responses request the fake upstream
// received as that client's baseline body (so both targets cost the
// upstream the same work), checks one answer of each, and tallies what the
// relay's upstream request replayed.
func (s *stack) targets(ctx context.Context, client *http.Client, convs []*conversation, w workload) (relay, base *target, probes replayTally, err error) {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer "+relayToken)
	relay = &target{name: "relay", relay: true, stream: w.stream, url: s.relayURL + "/v1/chat/completions", header: h}
	bh := http.Header{}
	// the client's token: the baseline's header_up replaces it
	bh.Set("Authorization", "Bearer "+relayToken)
	base = &target{name: "baseline", stream: w.stream, url: s.baselineURL + "/v1/responses", header: bh}
	ix := newReplayIndex(convs)
	for _, c := range convs {
		body, err := chatBody(c.messages, w.stream)
		if err != nil {
			return nil, nil, probes, err
		}
		s.fake.Reset()
		if err := probe(ctx, client, relay, body); err != nil {
			return nil, nil, probes, fmt.Errorf("loadharness: %s %s relay probe: %w\n%s", c.tag, w.name, err, tail(s.caddy.Logs(), logTail))
		}
		var up []byte
		var upHeader http.Header
		accepted := 0
		s.fake.Scan(func(r *fakeupstream.Request) {
			probes.add(r.Status, ix.classify(r.UserText(), r.Replayed))
			if r.Status == http.StatusOK && r.Stream == w.stream {
				accepted++
				up = append([]byte(nil), r.Body...)
				upHeader = r.Header.Clone()
			}
		})
		s.fake.Reset()
		if accepted != 1 {
			return nil, nil, probes, fmt.Errorf("loadharness: %s %s relay probe: want one accepted upstream request with stream=%v, got %d",
				c.tag, w.name, w.stream, accepted)
		}
		relay.bodies = append(relay.bodies, body)
		base.bodies = append(base.bodies, up)
		base.header.Set("Content-Type", upHeader.Get("Content-Type"))
		if enc := upHeader.Get("Content-Encoding"); enc != "" {
			base.header.Set("Content-Encoding", enc)
		}
		if err := probe(ctx, client, base, up); err != nil {
			return nil, nil, probes, fmt.Errorf("loadharness: %s %s baseline probe: %w\n%s", c.tag, w.name, err, tail(s.caddy.Logs(), logTail))
		}
		s.fake.Reset()
	}
	return relay, base, probes, nil
}

// probe sends body to t, checks its answer and records its size.
func probe(ctx context.Context, client *http.Client, t *target, body []byte) error {
	c := newChecker(t.relay, t.stream)
	if _, err := do(ctx, client, t, body, c); err != nil {
		return err
	}
	t.answerBytes = c.size()
	return nil
}

// do sends body to t, reads the answer to its end with c and returns how
// long that took.
func do(ctx context.Context, client *http.Client, t *target, body []byte, c checker) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("new request: %w", err)
	}
	req.Header = t.header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("status %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	if err := c.check(resp.Body); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}
