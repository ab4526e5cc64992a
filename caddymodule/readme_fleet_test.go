package caddymodule

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// readmeCaddyfiles returns the caddyfile code blocks of the README section
// that starts with heading, up to the next "## " heading.
func readmeCaddyfiles(t *testing.T, heading string) []string {
	t.Helper()
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(src), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	var blocks []string
	for {
		_, rest, ok := strings.Cut(section, "```caddyfile\n")
		if !ok {
			return blocks
		}
		block, after, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatal("unterminated caddyfile block in the README")
		}
		blocks = append(blocks, block)
		section = after
	}
}

// TestReadmeFleetAdapts keeps the README's fleet example valid: the front
// shards by Authorization, checks /v1/health actively and connections
// passively, and retries without a retry matcher (so a POST is retried
// only when it never reached a relay); the relay drains with a shutdown
// delay and a grace period.
func TestReadmeFleetAdapts(t *testing.T) {
	blocks := readmeCaddyfiles(t, "## Scaling out: a fleet of relays")
	if len(blocks) != 2 {
		t.Fatalf("the fleet section has %d caddyfile blocks, want the front and a relay", len(blocks))
	}
	front, _ := json.Marshal(adapt(t, blocks[0]))
	for _, want := range []string{
		`"handler":"reverse_proxy"`,
		`"selection_policy":{"field":"Authorization","policy":"header"}`,
		`"retries":2`,
		`"uri":"/v1/health"`,
		`"passive":{"fail_duration":30000000000,"max_fails":1}`,
	} {
		if !strings.Contains(string(front), want) {
			t.Errorf("front lacks %s:\n%s", want, front)
		}
	}
	if strings.Contains(string(front), "retry_match") {
		t.Errorf("front retries requests that reached a relay:\n%s", front)
	}
	relay, _ := json.Marshal(adapt(t, blocks[1]))
	for _, want := range []string{
		`"handler":"reasoning_relay"`, `"grace_period":600000000000`, `"shutdown_delay":15000000000`,
		`"reasoning_cache":{"database":"/var/lib/caddy/reasoning-cache.sqlite","enabled":true}`,
	} {
		if !strings.Contains(string(relay), want) {
			t.Errorf("relay lacks %s:\n%s", want, relay)
		}
	}
}
