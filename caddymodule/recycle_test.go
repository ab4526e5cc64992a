package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// TestRecycledBuffersCarryOnlyTheirOwnRequest: cache-off requests of
// large histories, relayed concurrently and one after another, reuse each
// other's body and translation buffers (recycle.go); every upstream body
// must still carry exactly its own request's history, whole. The requests
// alternate between histories whose large user message is forwarded as
// the client's own bytes (the body stays aliased until the upstream has
// it) and histories of tool results (translated into the item buffer, the
// body given back before the upstream call), JSON and SSE. A buffer given
// back while something could still read it would show up here as a
// foreign or missing marker.
func TestRecycledBuffersCarryOnlyTheirOwnRequest(t *testing.T) {
	h, fake := startRelay(t, false)
	fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
		return fakeupstream.Scenario{Kind: fakeupstream.KindText, Text: "Done."}
	})
	const workers, each, repeats = 4, 6, 30000 // about 300 KB per history
	body := func(w, i int) []byte {
		marker := fmt.Sprintf("mk%dx%d ", w, i)
		content := strings.Repeat(marker, repeats/len(marker)*8)
		var msgs []map[string]any
		if i%2 == 0 {
			msgs = []map[string]any{{"role": "user", "content": content}}
		} else {
			msgs = []map[string]any{
				{"role": "user", "content": "Read the file."},
				{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": "call_1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": `{"path":"a.go"}`}}}},
				{"role": "tool", "tool_call_id": "call_1", "content": content},
				{"role": "user", "content": "And now?"},
			}
		}
		return benchChatBody(msgs, (w+i)%2 == 0)
	}
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				req := chatRequest(bytes.NewReader(body(w, i)))
				rec := httptest.NewRecorder()
				if err := h.ServeHTTP(rec, req, nil); err != nil || rec.Code != http.StatusOK {
					errs <- fmt.Sprintf("request %d/%d: %d %v %s", w, i, rec.Code, err, rec.Body)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	reqs := fake.Requests()
	if len(reqs) != workers*each {
		t.Fatalf("upstream saw %d requests, want %d", len(reqs), workers*each)
	}
	seen := map[string]bool{}
	markers := regexp.MustCompile(`mk\d+x\d+ `)
	for _, r := range reqs {
		if !json.Valid(r.Body) || r.Rejected != "" {
			t.Fatalf("upstream body invalid or rejected (%s)", r.Rejected)
		}
		found := markers.FindAll(r.Body, -1)
		if len(found) == 0 {
			t.Fatal("an upstream body carries no history")
		}
		m := string(found[0])
		for _, f := range found {
			if string(f) != m {
				t.Fatalf("an upstream body mixes %q with %q", m, f)
			}
		}
		if want := repeats / len(m) * 8; len(found) != want {
			t.Fatalf("upstream body of %q carries %d copies, want %d", m, len(found), want)
		}
		if seen[m] {
			t.Fatalf("%q reached the upstream twice", m)
		}
		seen[m] = true
	}
}

// TestRecyclerOnlyWithoutCacheAndBodyLog: a request with a reasoning
// cache engine or a body log never gives its buffers back (both may keep
// references past the upstream call).
func TestRecyclerOnlyWithoutCacheAndBodyLog(t *testing.T) {
	h, _ := startRelay(t, false)
	rq := &request{h: h}
	rc := rq.newRecycler([]byte("{}"))
	if rc == nil {
		t.Fatal("a cache-off request without a body log does not recycle")
	}
	hOn, _ := startRelay(t, true)
	rq = &request{h: hOn}
	rq.holdCache()
	defer rq.unpin()
	if rq.engine == nil {
		t.Fatal("no engine with the cache enabled")
	}
	if rq.newRecycler([]byte("{}")) != nil {
		t.Fatal("a request with a cache engine recycles")
	}
}
