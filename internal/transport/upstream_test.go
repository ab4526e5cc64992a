package transport

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"weak"
)

// TestUpstreamDoDropsTheBody: once the upstream has answered, neither the
// request nor the transport's copy of it keeps the body's parts, so that
// a large request body can be collected while its answer streams. The
// answer here is held open until the test has checked.
func TestUpstreamDoDropsTheBody(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("event: x\ndata: {}\n\n"))
		_ = http.NewResponseController(w).Flush()
		<-release
	}))
	defer srv.Close()
	defer close(release)
	up, err := NewUpstream(srv.URL+"/v1", "sk-test")
	if err != nil {
		t.Fatal(err)
	}
	defer up.CloseIdle()

	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = 'a'
	}
	held := weak.Make(&big[0])
	parts := net.Buffers{[]byte(`{"input":"`), big, []byte(`"}`)}
	n := int64(len(parts[0]) + len(big) + len(parts[2]))
	req, err := up.NewRequest(context.Background(), "responses", parts, n, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	big, parts = nil, nil
	resp, err := up.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	runtime.GC()
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the request body is still referenced while its answer is read")
	}
	runtime.KeepAlive(req)
	runtime.KeepAlive(resp)
}
