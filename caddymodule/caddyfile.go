package caddymodule

import (
	"math"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("reasoning_relay", parseCaddyfile)
	// The relay is a terminal handler like reverse_proxy; ordering it just
	// before reverse_proxy lets it be used in a site block without an
	// `order` line. An `order reasoning_relay ...` global option overrides
	// this.
	httpcaddyfile.RegisterDirectiveOrder("reasoning_relay", httpcaddyfile.Before, "reverse_proxy")
}

// parseCaddyfile sets up the handler from Caddyfile tokens.
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	handler := new(Handler)
	if err := handler.UnmarshalCaddyfile(h.Dispenser); err != nil {
		return nil, err
	}
	return handler, nil
}

// UnmarshalCaddyfile sets up the handler from Caddyfile tokens. Syntax:
//
//	reasoning_relay [<matcher>] {
//	    # upstream and credentials
//	    upstream            <base URL>   # default https://api.openai.com/v1
//	    api_key             <key>        # upstream credential, e.g. {env.OPENAI_API_KEY}; required
//	    relay_token         <token...>   # bearer tokens clients may use; required; repeatable
//	    caller_header       <name>       # its value partitions the cache; never authentication
//
//	    # models
//	    model_alias         <alias> <model> [effort <e>] [summary <s>] [verbosity <v>] [no_reasoning]
//	    model               <name...>    # extra models to list in GET /models
//	    default_effort      <effort>     # when neither the request nor the alias sets one
//
//	    # limits
//	    max_request_bytes   <size>       # default 64MiB; larger bodies get 413
//	    max_request_bytes_in_flight <size> # default 256MiB of bodies held at once; beyond it wait up to 5s, then 503
//	    max_response_bytes  <size>       # default 64MiB for buffered JSON and error bodies
//	    max_sse_event_bytes <size>       # default 8MiB per upstream SSE event
//
//	    # deadlines
//	    idle_timeout        <duration>   # default 15m: upload and upstream inactivity
//	    delivery_timeout    <duration>   # default 30s: finishing delivery after completion
//	    write_timeout       <duration>   # default 60s: one blocked write to the client
//	    sse_keepalive       <duration>   # default 15s; 0 disables
//
//	    # diagnostics
//	    log_bodies          <dir>        # capture redacted bodies for replay; default off
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // consume directive name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "upstream":
			if err := oneArg(d, &h.Upstream); err != nil {
				return err
			}
		case "api_key":
			if err := oneArg(d, &h.APIKey); err != nil {
				return err
			}
		case "relay_token":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			h.RelayTokens = append(h.RelayTokens, args...)
		case "caller_header":
			if err := oneArg(d, &h.CallerHeader); err != nil {
				return err
			}
		case "model_alias":
			if err := h.unmarshalAlias(d); err != nil {
				return err
			}
		case "model":
			args := d.RemainingArgs()
			if len(args) == 0 {
				return d.ArgErr()
			}
			h.Models = append(h.Models, args...)
		case "default_effort":
			if err := oneArg(d, &h.DefaultEffort); err != nil {
				return err
			}
		case "max_request_bytes":
			if err := sizeArg(d, &h.MaxRequestBytes); err != nil {
				return err
			}
		case "max_request_bytes_in_flight":
			if err := sizeArg(d, &h.MaxRequestBytesInFlight); err != nil {
				return err
			}
		case "max_response_bytes":
			if err := sizeArg(d, &h.MaxResponseBytes); err != nil {
				return err
			}
		case "max_sse_event_bytes":
			if err := sizeArg(d, &h.MaxSSEEventBytes); err != nil {
				return err
			}
		case "idle_timeout":
			if err := durationArg(d, &h.IdleTimeout); err != nil {
				return err
			}
		case "delivery_timeout":
			if err := durationArg(d, &h.DeliveryTimeout); err != nil {
				return err
			}
		case "write_timeout":
			if err := durationArg(d, &h.WriteTimeout); err != nil {
				return err
			}
		case "sse_keepalive":
			var v caddy.Duration
			if err := durationArg(d, &v); err != nil {
				return err
			}
			h.SSEKeepalive = &v
		case "log_bodies":
			if err := oneArg(d, &h.LogBodies); err != nil {
				return err
			}
		default:
			return d.Errf("unrecognized reasoning_relay subdirective '%s'", d.Val())
		}
	}
	return nil
}

// unmarshalAlias parses
// `model_alias <alias> <model> [effort <e>] [summary <s>] [verbosity <v>] [no_reasoning]`.
func (h *Handler) unmarshalAlias(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 2 {
		return d.ArgErr()
	}
	name, a := args[0], ModelAlias{Model: args[1]}
	for i := 2; i < len(args); i++ {
		opt := args[i]
		if opt == "no_reasoning" {
			a.NoReasoning = true
			continue
		}
		if i+1 >= len(args) {
			return d.Errf("model_alias %s: option '%s' needs a value", name, opt)
		}
		v := args[i+1]
		i++
		switch opt {
		case "effort":
			a.Effort = v
		case "summary":
			a.Summary = v
		case "verbosity":
			a.Verbosity = v
		default:
			return d.Errf("model_alias %s: unknown option '%s' (want effort, summary, verbosity or no_reasoning)", name, opt)
		}
	}
	if h.ModelAliases == nil {
		h.ModelAliases = make(map[string]ModelAlias)
	}
	if _, dup := h.ModelAliases[name]; dup {
		return d.Errf("model_alias %s is defined twice", name)
	}
	h.ModelAliases[name] = a
	return nil
}

func oneArg(d *caddyfile.Dispenser, dst *string) error {
	if !d.NextArg() {
		return d.ArgErr()
	}
	*dst = d.Val()
	if d.NextArg() {
		return d.ArgErr()
	}
	return nil
}

func sizeArg(d *caddyfile.Dispenser, dst *int64) error {
	var s string
	if err := oneArg(d, &s); err != nil {
		return err
	}
	n, err := humanize.ParseBytes(s)
	if err != nil {
		return d.Errf("bad size value '%s': %v", s, err)
	}
	if n == 0 || n > math.MaxInt64 {
		return d.Errf("size '%s' must be between 1 byte and %s", s, humanize.IBytes(math.MaxInt64))
	}
	*dst = int64(n)
	return nil
}

func durationArg(d *caddyfile.Dispenser, dst *caddy.Duration) error {
	var s string
	if err := oneArg(d, &s); err != nil {
		return err
	}
	v, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("bad duration value '%s': %v", s, err)
	}
	if v < 0 {
		return d.Errf("duration '%s' must not be negative", s)
	}
	*dst = caddy.Duration(v)
	return nil
}

// Interface guards
var (
	_ caddyfile.Unmarshaler = (*Handler)(nil)
)
