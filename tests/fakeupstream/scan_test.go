package fakeupstream

import (
	"net/http"
	"testing"
)

// TestScan: Scan visits the same requests as Requests, in the same order,
// with their verdicts, and sees nothing after Reset.
func TestScan(t *testing.T) {
	s, ts := newTest(t, Options{})
	post(t, ts, `{"model":"gpt-5.2","input":"hello"}`)
	post(t, ts, `{"model":"gpt-5.2","input":"hi","bogus":1}`)
	post(t, ts, `{"model":"gpt-5.2","input":"again [[tool]]","stream":true}`)

	want := s.Requests()
	var got []Request
	s.Scan(func(r *Request) { got = append(got, *r) })
	if len(got) != 3 || len(want) != 3 {
		t.Fatalf("Scan saw %d requests, Requests %d; want 3", len(got), len(want))
	}
	for i := range got {
		if got[i].Status != want[i].Status || got[i].ResponseID != want[i].ResponseID ||
			got[i].Rejected != want[i].Rejected || got[i].Stream != want[i].Stream {
			t.Errorf("request %d: Scan %+v, Requests %+v", i, got[i], want[i])
		}
	}
	if got[0].Status != http.StatusOK || got[1].Rejected != "unknown_parameter" || !got[2].Stream {
		t.Errorf("verdicts: %d %q %v", got[0].Status, got[1].Rejected, got[2].Stream)
	}
	if got[2].UserText() != "again" {
		t.Errorf("UserText through Scan = %q", got[2].UserText())
	}
	s.Reset()
	n := 0
	s.Scan(func(*Request) { n++ })
	if n != 0 {
		t.Errorf("Scan after Reset saw %d requests", n)
	}
}
