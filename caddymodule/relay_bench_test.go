package caddymodule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
)

// BenchmarkChat sends one Chat Completions request through
// Handler.ServeHTTP per iteration, at 20 KB, 200 KB and 2 MB histories,
// JSON and SSE, with the cache off and with the cache on and the
// request replaying its one earlier relayed turn (checked at the fake
// upstream). Each case has a baseline in the same run: the body the relay
// sent upstream, posted to the same fake upstream through net/http. The
// ratio relay/baseline is the relay's cost; run with -cpuprofile,
// -blockprofile and -memprofile to see where it goes.
func BenchmarkChat(b *testing.B) {
	for _, size := range []int{20 << 10, 200 << 10, 2 << 20} {
		for _, stream := range []bool{false, true} {
			for _, cache := range []bool{false, true} {
				name := fmt.Sprintf("%dKB/%s/%s", size>>10, map[bool]string{false: "json", true: "sse"}[stream],
					map[bool]string{false: "off", true: "hit"}[cache])
				b.Run(name, func(b *testing.B) { benchChat(b, size, stream, cache) })
			}
		}
	}
}

// benchChat measures one case: the relay and, as a sub-benchmark, the
// baseline.
func benchChat(b *testing.B, size int, stream, cache bool) {
	h, fake := startRelay(b, cache)
	fake.SetScript(func(*fakeupstream.Request) fakeupstream.Scenario {
		return fakeupstream.Scenario{Kind: fakeupstream.KindText, Text: "The fix is to return the wrapped error."}
	})
	msgs := benchHistory(size)
	msgs = append(msgs, map[string]any{"role": "user", "content": "Now fix it."})
	if cache {
		// the turn the measured request replays, relayed once
		first := benchChatBody(msgs, stream)
		if rec := benchServe(b, h, first); rec.Code != http.StatusOK {
			b.Fatalf("first turn: %d %s", rec.Code, rec.Body)
		}
		msgs = append(msgs, map[string]any{"role": "assistant", "content": "The fix is to return the wrapped error."},
			map[string]any{"role": "user", "content": "Thanks. And the test?"})
	}
	body := benchChatBody(msgs, stream)
	fake.Reset()
	if rec := benchServe(b, h, body); rec.Code != http.StatusOK {
		b.Fatalf("measured turn: %d %s", rec.Code, rec.Body)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Rejected != "" {
		b.Fatalf("upstream saw %d requests (%+v)", len(reqs), reqs)
	}
	if cache && len(reqs[0].Replayed) != 1 {
		b.Fatalf("no replay hit: %d reasoning items replayed", len(reqs[0].Replayed))
	}
	upBody, upHeader := reqs[0].Body, reqs[0].Header

	b.Run("relay", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			rec := benchServe(b, h, body)
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			if i%64 == 63 {
				fake.Reset() // the fake keeps every request it saw
			}
		}
		b.StopTimer()
		fake.Reset()
		if rec := benchServe(b, h, body); cache && len(fake.Requests()[0].Replayed) != 1 {
			b.Fatalf("the last request did not replay: %d %s", rec.Code, rec.Body)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		url := strings.TrimSuffix(h.Upstream, "/") + "/responses"
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(upBody))
			if err != nil {
				b.Fatal(err)
			}
			req.Header = upHeader.Clone()
			req.Header.Set("Authorization", "Bearer sk-test")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			_, err = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				b.Fatalf("baseline: %d %v", resp.StatusCode, err)
			}
			if i%64 == 63 {
				fake.Reset()
			}
		}
	})
}

// benchServe sends one chat request through the handler.
func benchServe(b *testing.B, h *Handler, body []byte) *httptest.ResponseRecorder {
	req := chatRequest(bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	if err := h.ServeHTTP(rec, req, nil); err != nil {
		b.Fatal(err)
	}
	return rec
}

// benchHistory is a Cursor-like history of at least size bytes: a system
// prompt and exchanges about source code.
func benchHistory(size int) []map[string]any {
	code := strings.Repeat("func handle(w http.ResponseWriter, r *http.Request) {\n\tif err := parseConfig(r.Context()); err != nil {\n\t\thttp.Error(w, err.Error(), 500)\n\t}\n}\n", 12)
	msgs := []map[string]any{{"role": "system", "content": "You are a careful coding assistant. " + strings.Repeat("Follow the instructions. ", 20)}}
	n := 0
	for turn := 0; n < size; turn++ {
		u := fmt.Sprintf("Step %d: what does this code do?\n%s", turn, code)
		a := fmt.Sprintf("Step %d: it reports configuration errors as 500.\n%s", turn, code)
		msgs = append(msgs, map[string]any{"role": "user", "content": u}, map[string]any{"role": "assistant", "content": a})
		n += len(u) + len(a)
	}
	return msgs
}

// benchChatBody encodes a Chat Completions request.
func benchChatBody(msgs []map[string]any, stream bool) []byte {
	req := map[string]any{"model": "gpt-5.2", "messages": msgs, "stream": stream}
	if stream {
		req["stream_options"] = map[string]any{"include_usage": true}
	}
	b, err := json.Marshal(req)
	if err != nil {
		panic(err)
	}
	return b
}
