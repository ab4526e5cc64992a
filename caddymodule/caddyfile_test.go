package caddymodule

import (
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestUnmarshalCaddyfile(t *testing.T) {
	d := caddyfile.NewTestDispenser(`reasoning_relay {
		upstream            https://example.test/v1
		api_key             {env.KEY}
		relay_token         a b
		relay_token         c
		caller_header       X-Caller
		model_alias         fast gpt-5.2 effort low summary auto verbosity low
		model_alias         plain gpt-4.1 no_reasoning
		model               gpt-5.2 o3
		default_effort      medium
		max_request_bytes   1MiB
		max_response_bytes  2MB
		max_sse_event_bytes 512KiB
		max_request_bytes_in_flight 3MiB
		idle_timeout        2m
		delivery_timeout    5s
		write_timeout       10s
		sse_keepalive       0
	}`)
	var h Handler
	if err := h.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if h.Upstream != "https://example.test/v1" || h.APIKey != "{env.KEY}" || h.CallerHeader != "X-Caller" {
		t.Fatalf("strings: %+v", h)
	}
	if strings.Join(h.RelayTokens, ",") != "a,b,c" || strings.Join(h.Models, ",") != "gpt-5.2,o3" {
		t.Fatalf("lists: %v %v", h.RelayTokens, h.Models)
	}
	if a := h.ModelAliases["fast"]; a != (ModelAlias{Model: "gpt-5.2", Effort: "low", Summary: "auto", Verbosity: "low"}) {
		t.Fatalf("alias fast: %+v", a)
	}
	if a := h.ModelAliases["plain"]; !a.NoReasoning || a.Model != "gpt-4.1" {
		t.Fatalf("alias plain: %+v", a)
	}
	if h.MaxRequestBytes != 1<<20 || h.MaxResponseBytes != 2_000_000 || h.MaxSSEEventBytes != 512<<10 || h.MaxRequestBytesInFlight != 3<<20 {
		t.Fatalf("sizes: %d %d %d", h.MaxRequestBytes, h.MaxResponseBytes, h.MaxSSEEventBytes)
	}
	if time.Duration(h.IdleTimeout) != 2*time.Minute || time.Duration(h.DeliveryTimeout) != 5*time.Second ||
		time.Duration(h.WriteTimeout) != 10*time.Second || h.SSEKeepalive == nil || *h.SSEKeepalive != 0 {
		t.Fatalf("durations: %v %v %v %v", h.IdleTimeout, h.DeliveryTimeout, h.WriteTimeout, h.SSEKeepalive)
	}
}

func TestUnmarshalCaddyfileErrors(t *testing.T) {
	for _, in := range []string{
		`reasoning_relay extra`,
		`reasoning_relay {
			bogus 1
		}`,
		`reasoning_relay {
			upstream
		}`,
		`reasoning_relay {
			upstream a b
		}`,
		`reasoning_relay {
			relay_token
		}`,
		`reasoning_relay {
			model_alias only
		}`,
		`reasoning_relay {
			model_alias a m effort
		}`,
		`reasoning_relay {
			model_alias a m colour blue
		}`,
		`reasoning_relay {
			model_alias a m
			model_alias a n
		}`,
		`reasoning_relay {
			max_request_bytes lots
		}`,
		`reasoning_relay {
			max_request_bytes 0
		}`,
		`reasoning_relay {
			idle_timeout soon
		}`,
		`reasoning_relay {
			idle_timeout -1s
		}`,
	} {
		var h Handler
		if err := h.UnmarshalCaddyfile(caddyfile.NewTestDispenser(in)); err == nil {
			t.Errorf("accepted %q", in)
		}
	}
}

func TestProvisionAndValidate(t *testing.T) {
	t.Setenv("RR_TEST_KEY", "sk-test")
	t.Setenv("RR_TEST_TOKEN", "tok")
	// a provisioned context without apps: the handler looks up the
	// reasoning_cache app, which Caddy creates disabled
	ctx, err := caddy.ProvisionContext(&caddy.Config{
		Admin:   &caddy.AdminConfig{Disabled: true},
		AppsRaw: caddy.ModuleMap{"reasoning_cache": []byte(`{"database":"` + t.TempDir() + `/db.sqlite"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}

	h := &Handler{APIKey: "{env.RR_TEST_KEY}", RelayTokens: []string{"{env.RR_TEST_TOKEN}"},
		ModelAliases: map[string]ModelAlias{"b": {Model: "m2"}, "a": {Model: "m1", Effort: "low"}}, Models: []string{"m1", "x"}}
	if err := h.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Validate(); err != nil {
		t.Fatal(err)
	}
	if h.Upstream != DefaultUpstream || h.MaxRequestBytes != DefaultMaxRequestBytes ||
		time.Duration(*h.SSEKeepalive) != DefaultSSEKeepalive || h.apiKey != "sk-test" {
		t.Fatalf("defaults not filled: %+v", h)
	}
	if strings.Join(h.models, ",") != "a,b,m1,m2,x" {
		t.Fatalf("models %v", h.models)
	}

	for name, bad := range map[string]*Handler{
		"no key":          {RelayTokens: []string{"t"}},
		"empty env key":   {APIKey: "{env.RR_TEST_UNSET}", RelayTokens: []string{"t"}},
		"no token":        {APIKey: "k"},
		"empty env token": {APIKey: "k", RelayTokens: []string{"{env.RR_TEST_UNSET}"}},
		"bad upstream":    {APIKey: "k", RelayTokens: []string{"t"}, Upstream: "ftp://x"},
	} {
		err := bad.Provision(ctx)
		if err == nil {
			t.Errorf("%s: provisioned", name)
		} else if strings.Contains(err.Error(), "reasoning_relay") {
			// Caddy prefixes "provision http.handlers.reasoning_relay: "
			t.Errorf("%s: error repeats the module name: %v", name, err)
		}
	}
	for name, bad := range map[string]*Handler{
		"alias effort":   {APIKey: "k", RelayTokens: []string{"t"}, ModelAliases: map[string]ModelAlias{"a": {Model: "m", Effort: "extreme"}}},
		"alias no model": {APIKey: "k", RelayTokens: []string{"t"}, ModelAliases: map[string]ModelAlias{"a": {}}},
		"default effort": {APIKey: "k", RelayTokens: []string{"t"}, DefaultEffort: "lots"},
		"negative size":  {APIKey: "k", RelayTokens: []string{"t"}, MaxRequestBytes: -1},
		"budget < max":   {APIKey: "k", RelayTokens: []string{"t"}, MaxRequestBytes: 2 << 20, MaxRequestBytesInFlight: 1 << 20},
	} {
		if err := bad.Provision(ctx); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		err := bad.Validate()
		if err == nil {
			t.Errorf("%s: validated", name)
		} else if strings.Contains(err.Error(), "reasoning_relay") {
			// Caddy prefixes "http.handlers.reasoning_relay: invalid configuration: "
			t.Errorf("%s: error repeats the module name: %v", name, err)
		}
	}
}
