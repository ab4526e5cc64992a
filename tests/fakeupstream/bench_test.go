package fakeupstream

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// benchServe runs one request through the handler per iteration.
func benchServe(b *testing.B, s *Server, in string) {
	b.Helper()
	b.ReportAllocs()
	b.SetBytes(int64(len(in)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/responses", strings.NewReader(in))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testKey)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("status %d: %s", rec.Code, rec.Body.Bytes())
		}
		s.Reset()
	}
}

func BenchmarkStreamText(b *testing.B) {
	benchServe(b, New(Options{APIKey: testKey}), body("hello world", true, `"reasoning":{"summary":"auto"}`))
}

func BenchmarkStreamParallelTools(b *testing.B) {
	benchServe(b, New(Options{APIKey: testKey}), body("x [[parallel_tools]]", true, `"tools":`+testTools))
}

func BenchmarkReplayVerify(b *testing.B) {
	s := New(Options{APIKey: testKey})
	ts := httptest.NewServer(s)
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/responses", strings.NewReader(body("seed", false, "")))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+testKey)
	resp, err := ts.Client().Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	// Replay 20 issued reasoning items in one request.
	var items []string
	for i := 0; i < 20; i++ {
		t := s.newTurn(&parsedRequest{model: "m"}, Scenario{Kind: KindText}, testKey)
		items = append(items, reasoningItem(t.items[0].ID, t.items[0].Enc))
	}
	benchServe(b, s, replay(strings.Join(items, ",")))
}
