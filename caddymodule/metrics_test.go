package caddymodule

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

func TestMetricsRegisterOnEveryRegistryAndLint(t *testing.T) {
	for range 2 { // a reload makes a new registry; the collector carries on
		reg := prometheus.NewPedanticRegistry()
		if err := registerMetrics(reg); err != nil {
			t.Fatal(err)
		}
		if err := registerMetrics(reg); err != nil {
			t.Fatalf("registering twice: %v", err)
		}
		if _, err := reg.Gather(); err != nil {
			t.Fatal(err)
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(collector{}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(families).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

func TestOutcomesAreAFixedSet(t *testing.T) {
	for reason, want := range map[string]string{
		"ok": "ok", "upstream_status_429": "upstream_error", "upstream_idle_timeout": "timeout",
		"upload_idle_timeout": "timeout", "unauthorized": "unauthorized", "request_too_large": "client_error",
		"client_gone": "client_gone", "cache_unavailable": "cache_unavailable", "translation_failed": "relay_error",
		"sse_event_too_large": "upstream_error", "anything new": "relay_error",
	} {
		if got := outcomes[outcomeOfReason(reason)]; got != want {
			t.Errorf("reason %q counted as %q, want %q", reason, got, want)
		}
	}
	if routes[routeIndex("")] != "other" || routes[routeIndex("chat")] != "chat" {
		t.Error("routes are not a fixed set")
	}
}

// TestDashboardUsesExistingMetrics keeps docs/grafana-reasoning-relay.json
// in step with the collector.
func TestDashboardUsesExistingMetrics(t *testing.T) {
	raw, err := os.ReadFile("../docs/grafana-reasoning-relay.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewPedanticRegistry()
	if err := registerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range families {
		known[f.GetName()] = true
	}
	used := regexp.MustCompile(`caddy_reasoning_relay_[a-z_]+`).FindAllString(string(raw), -1)
	if len(used) == 0 {
		t.Fatal("the dashboard uses no relay metric")
	}
	for _, name := range used {
		base := name
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suffix); ok && known[b] {
				base = b
			}
		}
		if !known[base] {
			t.Errorf("the dashboard uses %s, which the relay does not export", name)
		}
	}
}
