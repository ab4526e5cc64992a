package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		in       []time.Duration
		q        float64
		want     time.Duration
		describe string
	}{
		{nil, 0.5, 0, "empty"},
		{ms(7), 0.99, 7 * time.Millisecond, "one"},
		{ms(1, 2, 3, 4), 0.5, 2 * time.Millisecond, "even count: lower middle"},
		{ms(hundred...), 0.5, 50 * time.Millisecond, "p50 of 1..100"},
		{ms(hundred...), 0.99, 99 * time.Millisecond, "p99 of 1..100"},
		{ms(hundred...), 1, 100 * time.Millisecond, "max"},
	} {
		if got := percentile(tc.in, tc.q); got != tc.want {
			t.Errorf("%s: percentile(%v) = %v, want %v", tc.describe, tc.q, got, tc.want)
		}
	}
}

func TestSummarize(t *testing.T) {
	s := &sample{latencies: []time.Duration{4, 1, 3, 2}, elapsed: 2 * time.Second, errors: 1, firstErr: "x"}
	st := summarize(s)
	if st.Requests != 4 || st.Errors != 1 || st.ReqPerS != 2 || st.P50 != 2 || st.P99 != 4 {
		t.Fatalf("summarize = %+v", st)
	}
	c := cellResult{Relay: stats{ReqPerS: 50, P50: 4, P99: 9}, Baseline: stats{ReqPerS: 100, P50: 2, P99: 3}}
	if rps, p50, p99 := c.ratios(); rps != 0.5 || p50 != 2 || p99 != 3 {
		t.Fatalf("ratios = %v %v %v", rps, p50, p99)
	}
}

func TestSSEChecker(t *testing.T) {
	long := strings.Repeat("x", 100<<10) // longer than the reader's buffer
	for _, tc := range []struct {
		name, body string
		terminal   []byte
		ok         bool
	}{
		{"relay done", "data: {\"a\":1}\n\ndata: [DONE]\n\n", sseDone, true},
		{"relay done without final newline", "data: {}\n\ndata: [DONE]", sseDone, true},
		{"relay cut", "data: {\"a\":1}\n\n", sseDone, false},
		{"marker inside a data line", "data: \"data: [DONE]\"\n\n", sseDone, false},
		{"marker after a long line", "data: " + long + "\n\ndata: [DONE]\n\n", sseDone, true},
		// the tail of a line exactly one buffer long starts with the marker
		{"marker only in a long line's tail", "data: " + strings.Repeat("x", 32<<10-6) + "data: [DONE]\n\n", sseDone, false},
		{"baseline completed", "event: response.created\ndata: {}\n\nevent: response.completed\ndata: {}\n\n", sseCompleted, true},
		{"baseline failed", "event: response.created\ndata: {}\n\nevent: response.failed\ndata: {}\n\n", sseCompleted, false},
	} {
		c := &sseChecker{terminal: tc.terminal}
		// twice: the second call reuses the reader
		for range 2 {
			err := c.check(strings.NewReader(tc.body))
			if (err == nil) != tc.ok {
				t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
			}
			if c.size() != len(tc.body) {
				t.Errorf("%s: size %d, want %d", tc.name, c.size(), len(tc.body))
			}
		}
	}
	c := &sseChecker{terminal: sseDone}
	broken := io.MultiReader(strings.NewReader("data: {}\n"), errReader{})
	if err := c.check(broken); err == nil || errors.Is(err, errNoTerminal) {
		t.Errorf("a read error gave %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestJSONChecker(t *testing.T) {
	relay := newChecker(true, false)
	base := newChecker(false, false)
	chat := `{"id":"chatcmpl-1","object":"chat.completion","choices":[{"finish_reason":"stop"}]}`
	resp := `{"id":"resp_1","object":"response","status":"completed"}`
	for _, tc := range []struct {
		name string
		c    checker
		body string
		ok   bool
	}{
		{"relay ok", relay, chat, true},
		{"relay truncated", relay, chat[:len(chat)-2], false},
		{"relay length", relay, strings.Replace(chat, "stop", "length", 1), false},
		{"baseline ok", base, resp, true},
		{"baseline incomplete", base, strings.Replace(resp, "completed", "incomplete", 1), false},
		{"baseline to relay", relay, resp, false},
	} {
		if err := tc.c.check(strings.NewReader(tc.body)); (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
		if tc.c.size() != len(tc.body) {
			t.Errorf("%s: size %d, want %d", tc.name, tc.c.size(), len(tc.body))
		}
	}
}

func TestChatBody(t *testing.T) {
	msgs := []json.RawMessage{rawMessage(chatMessage{Role: "user", Content: text("hi")})}
	for _, stream := range []bool{false, true} {
		b, err := chatBody(msgs, stream)
		if err != nil {
			t.Fatal(err)
		}
		hasOpts := bytes.Contains(b, []byte(`"stream_options"`))
		if hasOpts != stream || !bytes.Contains(b, []byte(`"model":"`+relayModel+`"`)) ||
			!bytes.Contains(b, []byte(`"messages":[{"role":"user","content":"hi"}]`)) {
			t.Errorf("stream=%v: body %s", stream, b)
		}
	}
}

func TestParseFlags(t *testing.T) {
	var errw bytes.Buffer
	cfg, err := parseFlags([]string{"-duration", "3s", "-requests", "50", "-concurrency", "2, 8,2"}, &errw)
	if err != nil {
		t.Fatalf("parseFlags: %v (%s)", err, errw.String())
	}
	if cfg.Duration != 3*time.Second || cfg.Requests != 50 || !slices.Equal(cfg.Concurrency, []int{2, 8}) {
		t.Fatalf("cfg = %+v", cfg)
	}
	if len(cfg.Workloads) != 2 || cfg.Workloads[0].name != "json" || !cfg.Workloads[1].stream {
		t.Fatalf("default workloads = %+v", cfg.Workloads)
	}
	def, err := parseFlags(nil, &errw)
	if err != nil || !slices.Equal(def.Concurrency, []int{1, 8}) || def.Duration != 6*time.Second ||
		!slices.Equal(def.Caches, []bool{false, true}) || len(def.Sizes) != 3 ||
		def.Sizes[0] != (historySize{"20KB", 20_000}) || def.Sizes[2] != (historySize{"2MB", 2_000_000}) ||
		def.Burst != 100 || def.BurstSize != (historySize{"1MiB", 1 << 20}) || def.ProfileDir != "" {
		t.Fatalf("defaults = %+v, %v", def, err)
	}
	on, err := parseFlags([]string{"-cache", "on", "-sizes", "64KiB, 300", "-burst", "0", "-profile", "/tmp/p"}, &errw)
	if err != nil || !slices.Equal(on.Caches, []bool{true}) || len(on.Sizes) != 2 || on.Sizes[0].bytes != 64<<10 ||
		on.Sizes[1].bytes != 300 || on.Burst != 0 || on.ProfileDir != "/tmp/p" {
		t.Fatalf("-cache on -sizes ... = %+v, %v", on, err)
	}
	burstOnly, err := parseFlags([]string{"-sizes", "none", "-burst", "10"}, &errw)
	if err != nil || len(burstOnly.Sizes) != 0 || burstOnly.Burst != 10 {
		t.Fatalf("-sizes none = %+v, %v", burstOnly, err)
	}
	sse, err := parseFlags([]string{"-workloads", "sse"}, &errw)
	if err != nil || len(sse.Workloads) != 1 || sse.Workloads[0].name != "sse" {
		t.Fatalf("-workloads sse = %+v, %v", sse.Workloads, err)
	}
	for _, args := range [][]string{
		{"-concurrency", "0"},
		{"-concurrency", "a"},
		{"-concurrency", ","},
		{"-duration", "0s"},
		{"-requests", "-1"},
		{"-rounds", "0"},
		{"-workloads", "grpc"},
		{"-workloads", ","},
		{"-cache", "maybe"},
		{"-cache", ","},
		{"-sizes", "20GB"},
		{"-sizes", "0KB"},
		{"-sizes", ""},
		{"-sizes", "65MiB"},
		{"-sizes", "none", "-burst", "0"},
		{"-burst", "-1"},
		{"-burst-size", "x"},
		{"-profile", "/tmp/p", "-profile-time", "10ms"},
		{"extra"},
	} {
		if _, err := parseFlags(args, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", args)
		}
	}
}

func TestRoundBudget(t *testing.T) {
	for _, tc := range []struct{ requests, rounds int }{{20, 2}, {21, 4}, {3, 4}, {1000000, 4}} {
		sum := 0
		for round := range tc.rounds {
			n := roundBudget(tc.requests, tc.rounds, round)
			if n < tc.requests/tc.rounds || n > tc.requests/tc.rounds+1 {
				t.Errorf("%d requests in %d rounds: round %d gets %d", tc.requests, tc.rounds, round, n)
			}
			sum += n
		}
		if sum != tc.requests {
			t.Errorf("%d requests in %d rounds: the phases add up to %d", tc.requests, tc.rounds, sum)
		}
	}
}

// TestPhase runs phases against a server that fails some requests in
// different ways: every request is counted once, failures as errors, and
// the count and time bounds end the phase.
func TestPhase(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		switch n.Add(1) % 5 {
		case 0:
			http.Error(w, "boom", http.StatusInternalServerError)
		case 1:
			io.WriteString(w, "data: {}\n\n") // cut: no [DONE]
		default:
			io.WriteString(w, "data: {}\n\ndata: [DONE]\n\n")
		}
	}))
	defer srv.Close()
	dials := &dialCounter{}
	client := newClient(3, dials)
	defer client.CloseIdleConnections()
	h := http.Header{}
	h.Set("Authorization", "Bearer tok")
	tg := &target{name: "relay", relay: true, stream: true, url: srv.URL, bodies: [][]byte{[]byte("{}")}, header: h}

	var s sample
	phase(context.Background(), client, tg, 3, 50, time.Minute, &s)
	if len(s.latencies) != 30 || s.errors != 20 || s.firstErr == "" {
		t.Fatalf("50 requests: %d ok, %d errors (first %q); want 30 and 20", len(s.latencies), s.errors, s.firstErr)
	}
	if got := n.Load(); got != 50 {
		t.Fatalf("server saw %d requests, want 50", got)
	}
	if d := dials.count(srv.URL); d < 1 || d > 3+20 {
		t.Errorf("%d connections for 3 workers", d)
	}

	// the time bound ends a phase whose count bound is out of reach
	var timed sample
	phase(context.Background(), client, tg, 2, 1<<30, 50*time.Millisecond, &timed)
	if len(timed.latencies) == 0 || timed.elapsed < 50*time.Millisecond {
		t.Errorf("timed phase: %d requests in %v", len(timed.latencies), timed.elapsed)
	}

	// a cancelled context sends nothing
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	before := n.Load()
	var none sample
	phase(ctx, client, tg, 2, 10, time.Minute, &none)
	if n.Load() != before || len(none.latencies)+none.errors != 0 {
		t.Errorf("cancelled phase sent %d requests", n.Load()-before)
	}
}
