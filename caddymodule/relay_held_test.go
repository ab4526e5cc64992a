package caddymodule

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"sync"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// BenchmarkChatHeld measures the heap one chat request holds while it
// waits on the upstream: for a JSON answer before the upstream answers,
// for an event stream before its terminal event (where a request spends
// its time while the model works). The figure held/history is what issue
// 14's memory goal multiplies by the concurrent requests. The upstream
// replays, in pieces it controls, the answer the fake upstream gave to
// the conversation's first turn, and keeps nothing of the request body,
// so that what is held is the relay's. Run it by hand:
//
//	go test -run '^$' -bench ChatHeld -benchtime 3x ./caddymodule/
func BenchmarkChatHeld(b *testing.B) {
	for _, size := range []int{1 << 20, 2 << 20} {
		for _, stream := range []bool{false, true} {
			for _, cache := range []bool{false, true} {
				name := fmt.Sprintf("%dKB/%s/%s", size>>10, map[bool]string{false: "json", true: "sse"}[stream],
					map[bool]string{false: "off", true: "hit"}[cache])
				b.Run(name, func(b *testing.B) { benchHeld(b, size, stream, cache) })
			}
		}
	}
}

// heldUpstream answers the first request through the fake upstream and
// records the answer; every later request it reads to its end, discards,
// answers with the recorded answer up to its terminal event, reports on
// paused and finishes once release receives.
type heldUpstream struct {
	fake    *fakeupstream.Server
	mu      sync.Mutex
	answer  []byte
	header  http.Header
	paused  chan struct{}
	release chan struct{}
}

func (u *heldUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	answer, header := u.answer, u.header
	u.mu.Unlock()
	if answer == nil {
		rec := &recordingWriter{ResponseWriter: w}
		u.fake.ServeHTTP(rec, r)
		u.mu.Lock()
		u.answer, u.header = rec.buf.Bytes(), w.Header().Clone()
		u.mu.Unlock()
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	for k, v := range header {
		w.Header()[k] = v
	}
	// a JSON answer is sent whole after the pause, a stream up to its
	// terminal event before it
	cut := bytes.LastIndex(answer, []byte("event: response.completed"))
	if cut > 0 {
		_, _ = w.Write(answer[:cut])
		_ = http.NewResponseController(w).Flush()
	} else {
		cut = 0
	}
	u.paused <- struct{}{}
	<-u.release
	_, _ = w.Write(answer[cut:])
}

// recordingWriter keeps a copy of what is written through it.
type recordingWriter struct {
	http.ResponseWriter
	buf bytes.Buffer
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	return w.ResponseWriter.Write(p)
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// benchHeld measures one case.
func benchHeld(b *testing.B, size int, stream, cache bool) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: "sk-test"})
	fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
		return fakeupstream.Scenario{Kind: fakeupstream.KindText, Text: "The fix is to return the wrapped error."}
	})
	up := &heldUpstream{fake: fake, paused: make(chan struct{}), release: make(chan struct{})}
	h := startRelayTo(b, cache, up)
	msgs := append(benchHistory(size), map[string]any{"role": "user", "content": "Now fix it."})
	if rec := benchServe(b, h, benchChatBody(msgs, stream)); rec.Code != http.StatusOK {
		b.Fatalf("first turn: %d %s", rec.Code, rec.Body)
	}
	msgs = append(msgs, map[string]any{"role": "assistant", "content": "The fix is to return the wrapped error."},
		map[string]any{"role": "user", "content": "Thanks. And the test?"})
	body := benchChatBody(msgs, stream)

	var held float64
	for i := 0; i < b.N; i++ {
		before := liveHeap()
		done := make(chan string)
		go func() {
			rec := benchServe(b, h, body)
			if rec.Code != http.StatusOK {
				done <- fmt.Sprintf("%d %s", rec.Code, rec.Body)
			}
			close(done)
		}()
		<-up.paused
		held += float64(liveHeap() - before)
		up.release <- struct{}{}
		if failed := <-done; failed != "" {
			b.Fatalf("measured turn: %s", failed)
		}
	}
	b.ReportMetric(held/float64(b.N)/float64(len(body)), "held/history")
	b.ReportMetric(held/float64(b.N)/(1<<20), "heldMiB")
}

// liveHeap returns the bytes of reachable heap objects. Two collections:
// the first moves sync.Pool contents to the victim cache, the second
// frees them, so that pooled buffers do not count; a third frees a buffer
// a request gave back while the first ran (the relay recycles its buffers
// as it takes in the upstream's answer, which may be just then).
func liveHeap() int64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
