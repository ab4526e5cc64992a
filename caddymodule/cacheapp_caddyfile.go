package caddymodule

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
)

func init() {
	httpcaddyfile.RegisterGlobalOption("reasoning_cache", parseCacheAppOption)
}

// parseCacheAppOption parses the reasoning_cache global option into the
// reasoning_cache app's JSON. Syntax:
//
//	{
//		reasoning_cache {
//			database  <path>      # default ./data/reasoning-cache.sqlite
//			enabled   <bool>      # true|false (also 1/0, on/off, yes/no); default false
//		}
//	}
//
// A bare `enabled` means true. The option may appear more than once; later
// blocks override the fields they set.
func parseCacheAppOption(d *caddyfile.Dispenser, existingVal any) (any, error) {
	app := new(CacheApp)
	if existingVal != nil {
		prev, ok := existingVal.(httpcaddyfile.App)
		if !ok {
			return nil, d.Errf("reasoning_cache: unexpected existing value %T", existingVal)
		}
		if err := json.Unmarshal(prev.Value, app); err != nil {
			return nil, d.Errf("reasoning_cache: merging with the earlier block: %v", err)
		}
	}
	d.Next() // the option's name
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	for d.NextBlock(0) {
		switch d.Val() {
		case "database":
			if !d.NextArg() {
				return nil, d.ArgErr()
			}
			app.Database = d.Val()
			if app.Database == "" {
				return nil, d.Err("reasoning_cache: database path must not be empty")
			}
			if d.NextArg() {
				return nil, d.ArgErr()
			}
		case "enabled":
			if !d.NextArg() {
				app.Enabled = true
				continue
			}
			v, err := parseCaddyBool(d.Val())
			if err != nil {
				return nil, d.Errf("reasoning_cache: enabled: %v", err)
			}
			app.Enabled = v
			if d.NextArg() {
				return nil, d.ArgErr()
			}
		default:
			return nil, d.Errf("reasoning_cache: unrecognized option %q (expected database or enabled)", d.Val())
		}
	}
	return httpcaddyfile.App{Name: "reasoning_cache", Value: caddyconfig.JSON(app, nil)}, nil
}

// parseCaddyBool accepts true/false, 1/0, on/off and yes/no, in any case.
func parseCaddyBool(s string) (bool, error) {
	switch strings.ToLower(s) {
	case "true", "1", "on", "yes":
		return true, nil
	case "false", "0", "off", "no":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use true or false)", s)
}
