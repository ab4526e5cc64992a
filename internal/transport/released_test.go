package transport

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestBodyReleasedWaitsForEveryReader: OnBodyReleased's function runs
// only once the parts are dropped and every reader opened of them is
// closed, exactly once; a closed reader reads nothing more (so a buffer
// recycled after the release can never reach the upstream).
func TestBodyReleasedWaitsForEveryReader(t *testing.T) {
	s := &bodySource{parts: net.Buffers{[]byte("abc"), []byte("def")}}
	r1, _ := s.open()
	r2, _ := s.open() // a transport retry's GetBody
	var runs atomic.Int32
	s.done = func() { runs.Add(1) }
	s.drop()
	if r3, _ := s.open(); r3 != http.NoBody {
		t.Fatal("a reader opened after the drop reads the parts")
	}
	r1.Close()
	if runs.Load() != 0 {
		t.Fatal("released while a reader is still open")
	}
	p := make([]byte, 2)
	if n, err := r2.Read(p); n != 2 || err != nil || string(p) != "ab" {
		t.Fatalf("open reader: %d %v %q", n, err, p)
	}
	r2.Close()
	r2.Close()
	r1.Close()
	if runs.Load() != 1 {
		t.Fatalf("released %d times, want once", runs.Load())
	}
	if n, err := r2.Read(p); n != 0 || err == nil {
		t.Fatalf("a closed reader read %d bytes (%v)", n, err)
	}
}

// TestBodyReleasedAfterDo: through a real transport, the function runs
// once the request is sent and answered, also for a server that answers
// before it has read the body (the transport may still be writing it
// then) and for a request without a body; it does not run before Do.
func TestBodyReleasedAfterDo(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/early" {
			w.WriteHeader(http.StatusBadRequest) // without reading the body
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	up, err := NewUpstream(srv.URL+"/v1", "sk-test")
	if err != nil {
		t.Fatal(err)
	}
	defer up.CloseIdle()
	big := bytes.Repeat([]byte("a"), 4<<20)
	for _, c := range []struct {
		path  string
		parts net.Buffers
	}{
		{"responses", net.Buffers{[]byte(`{"input":"`), big, []byte(`"}`)}},
		{"early", net.Buffers{big}},
		{"responses", nil},
	} {
		var n int64
		for _, p := range c.parts {
			n += int64(len(p))
		}
		req, err := up.NewRequest(context.Background(), c.path, c.parts, n, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		released := make(chan struct{})
		var runs atomic.Int32
		OnBodyReleased(req, func() {
			if runs.Add(1) == 1 {
				close(released)
			}
		})
		if n > 0 && runs.Load() != 0 {
			t.Fatalf("%s: released before the request was sent", c.path)
		}
		resp, err := up.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the body was never released", c.path)
		}
		if runs.Load() != 1 {
			t.Fatalf("%s: released %d times", c.path, runs.Load())
		}
	}
}
