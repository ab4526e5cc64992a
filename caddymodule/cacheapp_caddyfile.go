package caddymodule

import (
	"encoding/json"
	"fmt"
	"strconv"
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
//			database           <path>      # default ./data/reasoning-cache.sqlite
//			enabled            <bool>      # true|false (also 1/0, on/off, yes/no); default false
//			memory_budget      <size>      # default 128MiB
//			max_concurrent     <n>         # full-cache sessions at once; default 10
//			entry_allowance    <size>      # default 4MiB
//			replay_ceiling     <size>      # replayed output per request; default 16MiB
//			max_plan_blocks    <n>         # default 256 (formerly max_plan_records)
//			intent_timeout     <duration>  # default 15m of inactivity (formerly generation_timeout)
//			replay_retry       <bool>      # default on
//			retention          <duration>  # idle age before cleanup may delete an output; default and minimum 30d
//			disk_admission     <size>      # no new outputs stored above this database+WAL size; default 1GiB
//			reserve            <size>      # allocated file released on a full disk; default 64MiB, minimum 64KiB
//			snapshot_dir       <path>      # admin API snapshots; default ~/.reasoning-relay-inspection
//			snapshot_free_margin <size>    # free space left after a snapshot; default 64MiB
//			snapshot_max_source  <size>    # largest database a snapshot copies; default 256MiB
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
		case "memory_budget":
			if err := sizeArg(d, &app.MemoryBudget); err != nil {
				return nil, err
			}
		case "entry_allowance":
			if err := sizeArg(d, &app.EntryAllowance); err != nil {
				return nil, err
			}
		case "replay_ceiling":
			if err := sizeArg(d, &app.ReplayCeiling); err != nil {
				return nil, err
			}
		case "max_concurrent":
			if err := intArg(d, &app.MaxConcurrent); err != nil {
				return nil, err
			}
		case "max_plan_blocks", "max_plan_records": // the former name stays accepted
			if err := intArg(d, &app.MaxPlanBlocks); err != nil {
				return nil, err
			}
		case "intent_timeout", "generation_timeout": // the former name stays accepted
			if err := durationArg(d, &app.IntentTimeout); err != nil {
				return nil, err
			}
		case "replay_retry":
			var v string
			if err := oneArg(d, &v); err != nil {
				return nil, err
			}
			b, err := parseCaddyBool(v)
			if err != nil {
				return nil, d.Errf("reasoning_cache: replay_retry: %v", err)
			}
			app.ReplayRetry = &b
		case "retention":
			if err := durationArg(d, &app.Retention); err != nil {
				return nil, err
			}
		case "disk_admission":
			if err := sizeArg(d, &app.DiskAdmission); err != nil {
				return nil, err
			}
		case "reserve":
			if err := sizeArg(d, &app.Reserve); err != nil {
				return nil, err
			}
		case "snapshot_dir":
			if err := oneArg(d, &app.SnapshotDir); err != nil {
				return nil, err
			}
		case "snapshot_free_margin":
			if err := sizeArg(d, &app.SnapshotFreeMargin); err != nil {
				return nil, err
			}
		case "snapshot_max_source":
			if err := sizeArg(d, &app.SnapshotMaxSource); err != nil {
				return nil, err
			}
		default:
			return nil, d.Errf("reasoning_cache: unrecognized option %q", d.Val())
		}
	}
	return httpcaddyfile.App{Name: "reasoning_cache", Value: caddyconfig.JSON(app, nil)}, nil
}

// intArg parses one positive integer argument.
func intArg(d *caddyfile.Dispenser, dst *int) error {
	var v string
	if err := oneArg(d, &v); err != nil {
		return err
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		return d.Errf("'%s' is not a positive integer", v)
	}
	*dst = n
	return nil
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
