package fakeupstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestConcurrentRequests(t *testing.T) {
	s, ts := newTest(t, Options{Delay: time.Millisecond})
	send := func(b string) (int, []byte) { return post(t, ts, b) }
	seed := issue(t, send, "")
	s.Reset()
	const workers, each = 8, 12
	tokens := []string{"", "[[tool]]", "[[parallel_tools]]", "[[custom_tool]]", "[[refusal]]", "[[length]]", "[[drift]]", "[[cut]]"}
	var wg sync.WaitGroup
	errs := make(chan string, workers*each)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				var b string
				switch i % 3 {
				case 0:
					b = body("w"+fmt.Sprint(w)+" "+tokens[(w+i)%len(tokens)], i%2 == 0, `"tools":`+testTools)
				case 1:
					b = replay(reasoningItem(seed.id, seed.done))
				default:
					b = replay(reasoningItem("rs_wrong", seed.done))
				}
				req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(b))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Authorization", "Bearer "+testKey)
				resp, err := ts.Client().Do(req)
				if err != nil {
					errs <- err.Error()
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				_ = s.Requests() // readers race with writers
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	reqs := s.Requests()
	if len(reqs) != workers*each {
		t.Fatalf("%d requests recorded, want %d", len(reqs), workers*each)
	}
	ids := map[string]bool{}
	var replayed, rejected int
	for _, r := range reqs {
		switch {
		case r.Rejected == "invalid_encrypted_content":
			rejected++
		case r.Rejected != "":
			t.Errorf("unexpected rejection %q: %s", r.Rejected, r.RejectedMessage)
		default:
			if ids[r.ResponseID] || r.ResponseID == "" {
				t.Errorf("response id %q repeated or empty", r.ResponseID)
			}
			ids[r.ResponseID] = true
			if len(r.Replayed) == 1 && r.Replayed[0].ID == seed.id {
				replayed++
			}
		}
	}
	if want := workers * each / 3; replayed != want || rejected != want {
		t.Fatalf("replayed %d rejected %d, want %d each", replayed, rejected, want)
	}
}

// TestClientGoneEndsStream fails by hanging (httptest.Server.Close waits for
// handlers) if a paused stream ignored the client going away.
func TestClientGoneEndsStream(t *testing.T) {
	_, ts := newTest(t, Options{Delay: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(body("x", true, "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	buf := make([]byte, 64)
	if _, err := io.ReadAtLeast(resp.Body, buf, len("event: response.created")); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(buf), "event: response.created\ndata: ") {
		t.Fatalf("first bytes %q (not flushed per event?)", buf)
	}
	cancel()
	resp.Body.Close()
	ts.Close()
}
