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

// stack is the system under test: one fake upstream and one Caddy process
// serving the relay and the baseline on two loopback ports.
type stack struct {
	fake        *fakeupstream.Server
	upstream    *httptest.Server
	caddy       *relaytest.Caddy
	relayURL    string // base URL of the relay site
	baselineURL string // base URL of the baseline site
}

// startStack starts the fake upstream and Caddy. Cleanups registered on tb
// stop both.
func startStack(tb *programTB, logLevel string) (*stack, error) {
	s := &stack{fake: fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})}
	s.upstream = httptest.NewServer(s.fake)
	tb.Cleanup(s.upstream.Close)

	err := tb.do(func() {
		basePort := relaytest.FreePort(tb)
		// Both sites run in the same Caddy process, so they share its
		// runtime, GC and CPU budget.
		s.caddy = relaytest.Start(tb, relaytest.Options{
			Site: fmt.Sprintf(relaySite, s.upstream.URL),
			ExtraSites: fmt.Sprintf("http://127.0.0.1:%d {\n\tbind 127.0.0.1\n", basePort) +
				fmt.Sprintf(baselineSite, s.upstream.URL) + "\n}\n",
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

// targets builds the relay and baseline targets of a workload. It sends
// one chat request through the relay, takes the Responses request the fake
// upstream received as the baseline's body (so both targets cost the
// upstream the same work), and checks one answer of each.
func (s *stack) targets(ctx context.Context, client *http.Client, w workload) (relay, base *target, err error) {
	body, err := chatBody(w.stream)
	if err != nil {
		return nil, nil, err
	}
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("Authorization", "Bearer "+relayToken)
	relay = &target{name: "relay", relay: true, stream: w.stream,
		url: s.relayURL + "/v1/chat/completions", body: body, header: h}

	s.fake.Reset()
	if err := probe(ctx, client, relay); err != nil {
		return nil, nil, fmt.Errorf("loadharness: %s relay probe: %w\n%s", w.name, err, s.caddy.Logs())
	}
	reqs := s.fake.Requests()
	s.fake.Reset()
	if len(reqs) != 1 || reqs[0].Status != http.StatusOK || reqs[0].Stream != w.stream {
		return nil, nil, fmt.Errorf("loadharness: %s relay probe: want one accepted upstream request with stream=%v, got %d",
			w.name, w.stream, len(reqs))
	}
	up := reqs[0]
	bh := http.Header{}
	bh.Set("Content-Type", up.Header.Get("Content-Type"))
	if enc := up.Header.Get("Content-Encoding"); enc != "" {
		bh.Set("Content-Encoding", enc)
	}
	// the client's token: the baseline's header_up replaces it
	bh.Set("Authorization", "Bearer "+relayToken)
	base = &target{name: "baseline", stream: w.stream,
		url: s.baselineURL + "/v1/responses", body: up.Body, header: bh}
	if err := probe(ctx, client, base); err != nil {
		return nil, nil, fmt.Errorf("loadharness: %s baseline probe: %w\n%s", w.name, err, s.caddy.Logs())
	}
	s.fake.Reset()
	return relay, base, nil
}

// probe sends one request to t, checks its answer and records its size.
func probe(ctx context.Context, client *http.Client, t *target) error {
	c := newChecker(t.relay, t.stream)
	if _, err := do(ctx, client, t, c); err != nil {
		return err
	}
	t.answerBytes = c.size()
	return nil
}

// do sends one request to t, reads the answer to its end with c and
// returns how long that took.
func do(ctx context.Context, client *http.Client, t *target, c checker) (time.Duration, error) {
	start := time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.url, bytes.NewReader(t.body))
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
