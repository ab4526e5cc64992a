package caddymodule

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bodylog"
)

func TestLogBodiesDirective(t *testing.T) {
	var h Handler
	if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`reasoning_relay {
		log_bodies /var/lib/caddy/captures
	}`)); err != nil {
		t.Fatal(err)
	}
	if h.LogBodies != "/var/lib/caddy/captures" {
		t.Fatalf("LogBodies = %q", h.LogBodies)
	}
	for _, bad := range []string{"reasoning_relay {\n log_bodies\n}", "reasoning_relay {\n log_bodies a b\n}"} {
		var h Handler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TestBodyLogWriterShared: handlers capturing to the same directory (two
// routes, or the old and new configuration during a reload) share one
// writer, which closes when the last of them is cleaned up.
func TestBodyLogWriterShared(t *testing.T) {
	ctx, err := caddy.ProvisionContext(&caddy.Config{
		Admin:   &caddy.AdminConfig{Disabled: true},
		AppsRaw: caddy.ModuleMap{"reasoning_cache": []byte(`{"database":"` + t.TempDir() + `/db.sqlite"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "cap")
	t.Setenv("RR_CAP_DIR", dir)
	newHandler := func(logBodies string) *Handler {
		h := &Handler{APIKey: "sk-test-key-123456", RelayTokens: []string{"relay-token-abcdef"}, LogBodies: logBodies}
		if err := h.Provision(ctx); err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := newHandler(dir)
	b := newHandler("{env.RR_CAP_DIR}/../cap")
	if a.bodyLog == nil || a.bodyLog != b.bodyLog {
		t.Fatal("the two handlers do not share one writer")
	}
	if n, _ := bodyLogWriters.References(a.bodyLogKey); n != 2 {
		t.Fatalf("%d references", n)
	}
	if len(a.secrets) != 2 || a.secrets[1] != "relay-token-abcdef" {
		t.Fatalf("secrets %v", a.secrets)
	}
	off := newHandler("")
	if off.bodyLog != nil {
		t.Fatal("capture on without log_bodies")
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("capture dir: %v %v", fi, err)
	}

	// the client response is recorded where the relay writes it
	rec := httptest.NewRecorder()
	rq := &request{h: a, id: "rr_hooktest", w: rec, r: httptest.NewRequest("POST", "/v1/responses", nil)}
	rq.bodies = a.bodyLog.Begin(rq.id, 1, a.secrets)
	rq.w.Header().Set("Content-Type", "application/json")
	if !rq.writeJSON(nil, []byte(`{}`)) {
		t.Fatal("writeJSON failed")
	}
	rq.close()

	a.Cleanup()
	if n, _ := bodyLogWriters.References(b.bodyLogKey); n != 1 {
		t.Fatalf("%d references after one cleanup", n)
	}
	w := b.bodyLog
	b.Cleanup()
	if _, ok := bodyLogWriters.References(dir); ok {
		t.Fatal("the writer outlived its last handler")
	}
	// closing drained the pending write of the client response
	if s := w.Stats(); s.Written != 1 || s.Dropped != 0 {
		t.Fatalf("stats %+v", s)
	}
	ls, _ := filepath.Glob(filepath.Join(dir, bodylog.BodiesDir, "*", "rr_hooktest-1-client_response.gz"))
	if len(ls) != 1 {
		t.Fatal("the client response was not captured")
	}
}
