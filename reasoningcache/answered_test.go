package reasoningcache

import (
	"bytes"
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"weak"

	"github.com/reasoning-relay/caddy-reasoning-relay/reasoningcache/canonical"
)

// TestAnsweredReleasesInput: once the upstream has accepted a request, the
// session no longer holds its input (about the size of the history), so
// that a large history can be collected while the answer is relayed; a
// resend without replay is then refused rather than sent empty.
func TestAnsweredReleasesInput(t *testing.T) {
	e := newEnv(t, Config{})
	c := newConv(t, canonical.ShapeChat)
	c.user("hello")
	req := c.request()
	big := []byte(`{"role":"user","content":"` + string(bytes.Repeat([]byte("a"), 1<<20)) + `"}`)
	held := weak.Make(&big[0])
	req.Input[len(req.Input)-1] = json.RawMessage(big)
	big = nil
	ctx := context.Background()
	s, err := e.eng.Prepare(ctx, req)
	must(t, err)
	if !s.Dispatched() {
		t.Fatalf("the session is not dispatched (skip %q)", s.Skip())
	}
	req = Request{}
	s.Answered()
	runtime.GC()
	runtime.GC()
	if held.Value() != nil {
		t.Fatal("the session still holds its input after the upstream answered")
	}
	if _, err := s.DropReplay(ctx); err == nil {
		t.Fatal("DropReplay after Answered returned no error")
	}
	s.Release(ctx)
	runtime.KeepAlive(s)
}
