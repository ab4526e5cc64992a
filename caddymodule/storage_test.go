package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestCallerStorageSurvivesWithoutTheCache: a reasoning model's explicit
// store and include survive when the cache does not handle the request
// (here: disabled); a request the cache handles gets store:false and the
// reasoning include merged in.
func TestCallerStorageSurvivesWithoutTheCache(t *testing.T) {
	body := `{"model":"gpt-5.2","input":"hi","store":true,"include":["message.output_text.logprobs"]}`
	for _, enabled := range []bool{false, true} {
		h, fake := startRelay(t, enabled)
		req := chatRequest(strings.NewReader(body))
		rec := httptest.NewRecorder()
		if err := h.ServeHTTP(rec, req, nil); err != nil {
			t.Fatal(err)
		}
		if rec.Code != http.StatusOK {
			t.Fatalf("cache %v: %d %s", enabled, rec.Code, rec.Body)
		}
		var sent struct {
			Store   bool     `json:"store"`
			Include []string `json:"include"`
		}
		reqs := fake.Requests()
		if err := json.Unmarshal(reqs[len(reqs)-1].Body, &sent); err != nil {
			t.Fatal(err)
		}
		want := struct {
			store   bool
			include string
		}{true, "message.output_text.logprobs"}
		if enabled {
			want.store, want.include = false, "message.output_text.logprobs,reasoning.encrypted_content"
		}
		if sent.Store != want.store || strings.Join(sent.Include, ",") != want.include {
			t.Errorf("cache %v: upstream store %v include %v, want %v %s", enabled, sent.Store, sent.Include, want.store, want.include)
		}
	}
}
