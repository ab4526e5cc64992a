// Command caddy is a Caddy binary with the reasoning relay plugged in.
//
// It is the standard three-import Caddy main (see Caddy's own cmd/caddy),
// so that `go run ./caddymodule/cmd/caddy run --config Caddyfile` works from
// a fresh clone. Release binaries are built with xcaddy from xcaddy.json;
// see the README.
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	// plug in Caddy's standard modules
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	// plug in the reasoning relay
	_ "github.com/reasoning-relay/caddy-reasoning-relay/caddymodule"
)

func main() {
	caddycmd.Main()
}
