package e2e

import (
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/reasoning-relay/caddy-reasoning-relay/tests/fakeupstream"
	"github.com/reasoning-relay/caddy-reasoning-relay/tests/relaytest"
)

// cacheGlobal enables the reasoning cache on a database under the
// instance's directory.
const cacheGlobal = `	reasoning_cache {
		database {DIR}/data/ledger.sqlite
		enabled true
	}`

// TestCacheReloadWhileStreaming: a `caddy reload` with a changed
// configuration while a streaming request holds the ledger hands the open
// ledger to the new configuration (not reopened), the stream finishes, and
// the ledger closes exactly once, when Caddy stops.
func TestCacheReloadWhileStreaming(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	site := func(keepalive string) string {
		return strings.ReplaceAll(fmt.Sprintf(siteConfig, "sse_keepalive "+keepalive), "{UPSTREAM}", up.URL)
	}
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}
	c := relaytest.Start(t, relaytest.Options{Global: cacheGlobal, Site: site("100ms"), Env: env})
	r := &relay{caddy: c, fake: fake}

	// a stream that takes ~2s: 12 events, 150ms apart
	done := make(chan error, 1)
	go func() {
		_, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
			Model:    "cursor-fast",
			Messages: []openai.ChatCompletionMessageParamUnion{userMsg("reload-while-streaming [[slow:150ms]]")},
		}, true)
		done <- err
	}()
	time.Sleep(400 * time.Millisecond)
	if err := c.Reload(relaytest.Options{Global: cacheGlobal, Site: site("200ms"), Env: env}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the stream that spanned the reload failed: %v", err)
	}
	// the new configuration serves
	if _, err := run(t, r.client(relayToken), openai.ChatCompletionNewParams{
		Model: "cursor-fast", Messages: []openai.ChatCompletionMessageParamUnion{userMsg("after-reload")},
	}, false); err != nil {
		t.Fatal(err)
	}
	c.Stop()
	logs := c.Logs()
	if n := strings.Count(logs, `"msg":"ledger opened"`); n != 1 {
		t.Fatalf("ledger opened %d times, want 1", n)
	}
	if !strings.Contains(logs, `"reused":true`) {
		t.Fatal("the reload did not reuse the open ledger")
	}
	if n := strings.Count(logs, `"msg":"ledger closed"`); n != 1 {
		t.Fatalf("ledger closed %d times, want 1", n)
	}
	info, err := os.Stat(filepath.Join(c.Dir, "data", "ledger.sqlite"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("ledger file: %v %v", info, err)
	}
}

// TestCacheOwnership: a second Caddy on the same ledger fails fast and
// says what to do; after the owner is killed with SIGKILL, a new process
// takes the ledger over.
func TestCacheOwnership(t *testing.T) {
	fake := fakeupstream.New(fakeupstream.Options{APIKey: upstreamKey})
	up := httptest.NewServer(fake)
	defer up.Close()
	dir := t.TempDir()
	global := strings.ReplaceAll(cacheGlobal, "{DIR}", dir)
	site := strings.ReplaceAll(fmt.Sprintf(siteConfig, ""), "{UPSTREAM}", up.URL)
	env := []string{"RT_UPSTREAM_KEY=" + upstreamKey, "RT_TOKEN=" + relayToken}

	first := relaytest.Start(t, relaytest.Options{Global: global, Site: site, Env: env})
	out := relaytest.StartErr(t, relaytest.Options{Global: global, Site: site, Env: env})
	if !strings.Contains(out, "is in use by another process") || !strings.Contains(out, "caddy reload") {
		t.Fatalf("second process did not explain the conflict:\n%s", out)
	}
	first.Kill()
	second := relaytest.Start(t, relaytest.Options{Global: global, Site: site, Env: env})
	// the ledger opens when the app starts, which Caddy may do just after
	// the site starts accepting connections
	if !second.WaitLog(`"msg":"ledger opened"`, 10*time.Second) {
		t.Fatalf("the ledger was not opened after the owner died:\n%s", second.Logs())
	}
}
