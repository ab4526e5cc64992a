package caddymodule

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	_ "github.com/caddyserver/caddy/v2/caddyconfig/caddyfile" // registers the caddyfile adapter
	_ "github.com/caddyserver/caddy/v2/modules/standard"
)

// adapt runs Caddy's Caddyfile adapter over src and returns the JSON.
func adapt(t *testing.T, src string) map[string]any {
	t.Helper()
	adapter := caddyconfig.GetAdapter("caddyfile")
	out, warnings, err := adapter.Adapt([]byte(src), map[string]any{"filename": "Caddyfile"})
	if err != nil {
		t.Fatalf("adapt: %v", err)
	}
	for _, w := range warnings {
		t.Logf("warning: %s", w.String())
	}
	var cfg map[string]any
	if err := json.Unmarshal(out, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCaddyfileExampleAdapts keeps caddyfile.example valid: it adapts, the
// relay handler and the reasoning_cache app come out with the documented
// fields.
func TestCaddyfileExampleAdapts(t *testing.T) {
	src, err := os.ReadFile("../caddyfile.example")
	if err != nil {
		t.Fatal(err)
	}
	cfg := adapt(t, string(src))
	raw, _ := json.Marshal(cfg)
	s := string(raw)
	for _, want := range []string{
		`"handler":"reasoning_relay"`, `"api_key":"{env.OPENAI_API_KEY}"`, `"relay_tokens":["{env.RELAY_TOKEN}"]`,
		`"gpt-5.2-high":{"effort":"high","model":"gpt-5.2","summary":"auto"}`, `"default_effort":"medium"`,
		`"reasoning_cache":{`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("adapted config lacks %s:\n%s", want, s)
		}
	}
	// the default site answers every host on its port: `curl
	// 127.0.0.1:8080` reaches the relay as well as `curl localhost:8080`
	if strings.Contains(s, `"host":[`) {
		t.Errorf("the example's default site only answers some host names:\n%s", s)
	}
}

// TestDirectiveOrder: without an order line the relay runs before
// reverse_proxy in the same site.
func TestDirectiveOrder(t *testing.T) {
	cfg := adapt(t, `:8080 {
	reverse_proxy localhost:9999
	reasoning_relay {
		api_key k
		relay_token t
	}
}`)
	raw, _ := json.Marshal(cfg)
	s := string(raw)
	relay, proxy := strings.Index(s, `"handler":"reasoning_relay"`), strings.Index(s, `"handler":"reverse_proxy"`)
	if relay < 0 || proxy < 0 || relay > proxy {
		t.Fatalf("reasoning_relay (at %d) must come before reverse_proxy (at %d):\n%s", relay, proxy, s)
	}
}

// TestCacheOptionAdapts: every reasoning_cache option reaches its JSON
// field, and repeated blocks merge. The second block uses the former names
// max_plan_records and generation_timeout, which stay accepted and adapt
// to max_plan_blocks and intent_timeout.
func TestCacheOptionAdapts(t *testing.T) {
	cfg := adapt(t, `{
	reasoning_cache {
		database /tmp/x.sqlite
		enabled on
		memory_budget 64MiB
		max_concurrent 3
	}
	reasoning_cache {
		entry_allowance 2MiB
		replay_ceiling 8MiB
		max_plan_records 9
		generation_timeout 2m
		replay_retry off
		retention 60d
		disk_admission 512MiB
		reserve 8MiB
		snapshot_dir /tmp/snaps
		snapshot_free_margin 1MiB
		snapshot_max_source 2MiB
	}
}
:8080 {
	respond ok
}`)
	raw, _ := json.Marshal(cfg["apps"].(map[string]any)["reasoning_cache"])
	want := `{"database":"/tmp/x.sqlite","disk_admission":536870912,"enabled":true,"entry_allowance":2097152,"intent_timeout":120000000000,"max_concurrent":3,"max_plan_blocks":9,"memory_budget":67108864,"replay_ceiling":8388608,"replay_retry":false,"reserve":8388608,"retention":5184000000000000,"snapshot_dir":"/tmp/snaps","snapshot_free_margin":1048576,"snapshot_max_source":2097152}`
	if string(raw) != want {
		t.Fatalf("adapted\n%s\nwant\n%s", raw, want)
	}
}

// TestCacheFormerNames: JSON configs written with the former option names
// keep their meaning, and a config that gives both names different values
// is refused rather than guessed at.
func TestCacheFormerNames(t *testing.T) {
	var a CacheApp
	if err := json.Unmarshal([]byte(`{"max_plan_records":9,"generation_timeout":120000000000}`), &a); err != nil {
		t.Fatal(err)
	}
	if err := a.resolveFormerNames(); err != nil {
		t.Fatal(err)
	}
	if a.MaxPlanBlocks != 9 || time.Duration(a.IntentTimeout) != 2*time.Minute {
		t.Fatalf("former names: max_plan_blocks %d, intent_timeout %s", a.MaxPlanBlocks, time.Duration(a.IntentTimeout))
	}
	for _, raw := range []string{
		`{"max_plan_records":9,"max_plan_blocks":8}`,
		`{"generation_timeout":120000000000,"intent_timeout":60000000000}`,
	} {
		var b CacheApp
		if err := json.Unmarshal([]byte(raw), &b); err != nil {
			t.Fatal(err)
		}
		if err := b.resolveFormerNames(); err == nil {
			t.Errorf("%s: no error", raw)
		}
	}
	same := CacheApp{MaxPlanRecords: 9, MaxPlanBlocks: 9}
	if err := same.resolveFormerNames(); err != nil || same.MaxPlanBlocks != 9 {
		t.Errorf("the same value under both names: %v, %d", err, same.MaxPlanBlocks)
	}
}
