// Package e2e tests the relay end to end: a real Caddy process started
// from a Caddyfile (tests/relaytest), the real OpenAI Go client, and the
// in-repo fake Responses upstream (tests/fakeupstream), which speaks the
// Responses wire format strictly and verifies the reasoning it is sent.
package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// Secrets handed to Caddy through the environment. Tests check that none
// of them ever reaches a client, the upstream (except the upstream key in
// its Authorization header) or a log line.
const (
	upstreamKey = "sk-upstream-CANARY-7f3a1c"
	relayToken  = "relay-token-CANARY-91b2"
	otherToken  = "relay-token-second-55e0"
	// upstreamKey2 is a second upstream credential the fake accepts;
	// reasoning issued under one key fails under the other.
	upstreamKey2 = "sk-upstream-second-CANARY-0d4e"
)

// relay is one Caddy with the relay in front of one fake upstream.
type relay struct {
	caddy *relaytest.Caddy
	fake  *fakeupstream.Server
	up    *httptest.Server
	// cancelled counts upstream requests whose context ended before the
	// fake finished answering (the relay cancelled them).
	mu        sync.Mutex
	cancelled int
}

// siteConfig is the default reasoning_relay block; {UPSTREAM} is replaced.
const siteConfig = `reasoning_relay {
	upstream {UPSTREAM}/v1
	api_key {env.RT_UPSTREAM_KEY}
	relay_token {env.RT_TOKEN} ` + otherToken + `
	model_alias cursor-fast gpt-5.2 effort low summary auto verbosity low
	model_alias plain gpt-4.1 no_reasoning
	model gpt-5.2-codex
	default_effort medium
	max_request_bytes 256KiB
	sse_keepalive 100ms
	%s
}`

// startRelay starts a fake upstream and a Caddy whose relay block is
// siteConfig plus extra subdirectives.
func startRelay(t testing.TB, extra string) *relay {
	t.Helper()
	return startRelayWith(t, "", extra)
}

// startRelayWith is startRelay with global options (e.g. reasoning_cache).
func startRelayWith(t testing.TB, global, extra string) *relay {
	t.Helper()
	r := &relay{fake: fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey, AltAPIKeys: []string{upstreamKey2}})}
	r.up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		fake := r.fake // tests may swap the fake
		r.mu.Unlock()
		fake.ServeHTTP(w, req)
		if req.Context().Err() != nil {
			r.mu.Lock()
			r.cancelled++
			r.mu.Unlock()
		}
	}))
	t.Cleanup(r.up.Close)
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, extra), "{UPSTREAM}", r.up.URL)
	r.caddy = relaytest.Start(t, relaytest.Options{
		Global:   global,
		Site:     site,
		LogLevel: "DEBUG",
		Env:      []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken},
	})
	return r
}

var (
	sharedOnce  sync.Once
	sharedRelay *relay
	sharedT     = &holderT{}
)

// holderT lets the shared relay outlive the first test that starts it.
type holderT struct {
	testing.TB
	cleanups []func()
}

func (h *holderT) Cleanup(f func()) { h.cleanups = append(h.cleanups, f) }

// Failed reports false: the shared relay's logs are printed by the tests
// that fail, not at the end.
func (h *holderT) Failed() bool { return false }

// Logf prints to stderr: the test that started the relay may be over.
func (h *holderT) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// sharedRelayFor returns the relay with the default configuration, started once
// for all tests that need nothing special.
func sharedRelayFor(t *testing.T) *relay {
	t.Helper()
	sharedOnce.Do(func() {
		sharedT.TB = t
		sharedRelay = startRelay(sharedT, "")
	})
	if sharedRelay == nil {
		t.Fatal("the shared relay failed to start")
	}
	return sharedRelay
}

func TestMain(m *testing.M) {
	code := m.Run()
	if replayTotals.eligible > 0 {
		fmt.Printf("figures: over all replay tests: %v\n", replayTotals)
	}
	for i := len(sharedT.cleanups) - 1; i >= 0; i-- {
		sharedT.cleanups[i]()
	}
	os.Exit(code)
}

// client returns an OpenAI client for the relay with the given token.
func (r *relay) client(token string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(r.caddy.BaseURL+"/v1/"),
		option.WithAPIKey(token),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(60*time.Second),
	)
}

// upstreamRequest returns the request the fake received whose body
// contains marker.
func (r *relay) upstreamRequest(t *testing.T, marker string) fakeupstream.Request {
	t.Helper()
	for _, req := range r.fake.Requests() {
		if strings.Contains(string(req.Body), marker) {
			return req
		}
	}
	t.Fatalf("no upstream request contains %q", marker)
	return fakeupstream.Request{}
}

// upstreamBody decodes the upstream request body containing marker.
func (r *relay) upstreamBody(t *testing.T, marker string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.upstreamRequest(t, marker).Body, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// apiError extracts the OpenAI client's error.
func apiError(t *testing.T, err error) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %v (%T) is not an *openai.Error", err, err)
	}
	return ae
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// userMsg is a shorthand for a user message.
func userMsg(text string) openai.ChatCompletionMessageParamUnion { return openai.UserMessage(text) }
