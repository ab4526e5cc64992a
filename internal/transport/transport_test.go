package transport

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchdog: kicks keep a watchdog from firing for longer than its
// timeout; left alone it fires once. The kicks come ten times as often as
// the timeout, so that only a scheduler stall of most of a second on a
// loaded machine could make the test fail.
func TestWatchdog(t *testing.T) {
	var fired atomic.Int32
	wd := NewWatchdog(time.Second, func() { fired.Add(1) })
	for range 15 { // 1.5 s of kicks, past the 1 s timeout
		time.Sleep(100 * time.Millisecond)
		wd.Kick()
	}
	if fired.Load() != 0 {
		t.Fatal("fired although kicked")
	}
	deadline := time.Now().Add(5 * time.Second)
	for fired.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if fired.Load() != 1 || !wd.Stop() {
		t.Fatalf("fired %d times, want 1", fired.Load())
	}
	wd.Kick()
	time.Sleep(1200 * time.Millisecond)
	if fired.Load() != 1 {
		t.Fatal("fired twice")
	}

	off := NewWatchdog(0, func() { t.Error("disabled watchdog fired") })
	off.Kick()
	if off.Stop() {
		t.Fatal("disabled watchdog reports fired")
	}
}

func TestReadAll(t *testing.T) {
	if _, err := ReadAll(strings.NewReader("12345"), 4, -1); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	if _, err := ReadAll(strings.NewReader(""), 4, 5); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("content-length over limit: err = %v", err)
	}
	b, err := ReadAll(strings.NewReader("1234"), 4, 4)
	if err != nil || string(b) != "1234" {
		t.Fatalf("got %q, %v", b, err)
	}
	b, err = ReadAll(strings.NewReader("abc"), 0, -1)
	if err != nil || string(b) != "abc" {
		t.Fatalf("unlimited: got %q, %v", b, err)
	}
}

func TestUpstreamError(t *testing.T) {
	e := UpstreamError(429, []byte(`{"error":{"message":"Rate limit reached for sk-secret-key-123","type":"requests","param":null,"code":"rate_limit_exceeded"}}`), "sk-secret-key-123")
	if e.Status != 429 || e.Code != "rate_limit_exceeded" || e.Type != "requests" || e.Param != "" {
		t.Fatalf("got %+v", e)
	}
	if strings.Contains(e.Message, "sk-secret") {
		t.Fatalf("secret not scrubbed: %q", e.Message)
	}
	e = UpstreamError(401, []byte(`{"error":{"message":"Incorrect API key provided: sk-ab***yz","type":"invalid_request_error","code":"invalid_api_key"}}`))
	if e.Status != http.StatusBadGateway || strings.Contains(e.Message, "sk-") {
		t.Fatalf("upstream 401 must become a 502 without the key: %+v", e)
	}
	e = UpstreamError(503, []byte("<html>bad gateway</html>"))
	if e.Status != 503 || e.Code != "upstream_http_503" || strings.Contains(e.Message, "html") {
		t.Fatalf("got %+v", e)
	}
}

func TestParseBaseURL(t *testing.T) {
	for _, bad := range []string{"", "ftp://x", "https://", "https://u:p@x/v1", "https://x/v1?k=1", "https://x/v1#f", "::"} {
		if _, err := ParseBaseURL(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	// the password (and the query value) of a rejected URL is not echoed
	for _, bad := range []string{"https://user:hunter2-CANARY@x/v1", "http://user:hunter2-CANARY@x:bad/v1", "ftp://user:hunter2-CANARY@x", "https://x/v1?key=hunter2-CANARY"} {
		_, err := ParseBaseURL(bad)
		if err == nil || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: error %v echoes the secret", bad, err)
		}
	}
	u, err := ParseBaseURL("https://api.example.test/v1/")
	if err != nil || u.String() != "https://api.example.test/v1" {
		t.Fatalf("got %v, %v", u, err)
	}
}

func TestUpstreamRequestHeaders(t *testing.T) {
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		if r.URL.Path != "/v1/responses" {
			t.Errorf("path %s", r.URL.Path)
		}
		http.Redirect(w, r, "/elsewhere", http.StatusFound)
	}))
	defer srv.Close()
	up, err := NewUpstream(srv.URL+"/v1", "sk-test")
	if err != nil {
		t.Fatal(err)
	}
	extra := http.Header{"Openai-Beta": {"responses=v1"}, "Authorization": {"Bearer client-token"}}
	req, err := up.NewRequest(t.Context(), "responses", net.Buffers{[]byte(`{}`)}, 2, true, extra)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := up.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("redirect was followed: %d", resp.StatusCode)
	}
	if got.Get("Authorization") != "Bearer sk-test" || len(got.Values("Authorization")) != 1 {
		t.Fatalf("authorization %q", got.Values("Authorization"))
	}
	if got.Get("Accept") != "text/event-stream" || got.Get("Openai-Beta") != "responses=v1" {
		t.Fatalf("headers %v", got)
	}
}

// TestDownstreamBackpressure checks that a client that stops reading does
// not block a write for longer than the backpressure deadline.
func TestDownstreamBackpressure(t *testing.T) {
	result := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ds := NewDownstream(w, 200*time.Millisecond)
		defer ds.Close()
		chunk := bytes.Repeat([]byte("x"), 64<<10)
		for range 10_000 { // far more than socket buffers hold
			if err := ds.WriteFlush(chunk); err != nil {
				result <- err
				return
			}
		}
		result <- nil
	}))
	defer srv.Close()
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// never read
	select {
	case err := <-result:
		if !errors.Is(err, ErrBackpressure) {
			t.Fatalf("err = %v, want ErrBackpressure", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("write stayed blocked")
	}
}

func TestDownstreamDeliveryDeadline(t *testing.T) {
	rec := httptest.NewRecorder()
	ds := NewDownstream(rec, time.Second)
	defer ds.Close()
	if err := ds.WriteFlush([]byte("a")); err != nil {
		t.Fatal(err)
	}
	ds.SetDeliveryDeadline(time.Now().Add(-time.Millisecond))
	if err := ds.WriteFlush([]byte("b")); !errors.Is(err, ErrDeliveryTimeout) {
		t.Fatalf("err = %v, want ErrDeliveryTimeout", err)
	}
	if rec.Body.String() != "a" || ds.Written() != 1 {
		t.Fatalf("body %q", rec.Body.String())
	}
}
