// Package caddymodule plugs the reasoning relay into Caddy: the HTTP handler
// http.handlers.reasoning_relay (Caddyfile directive reasoning_relay) and
// its Caddyfile parsing, the reasoning_cache app that owns the ledger, the
// admin API routes under /reasoning_cache/ and the `caddy reasoning-relay`
// CLI commands. It is thin: the work is done by the packages below it
// (translate, transport, capture, replay) and by reasoningcache.
package caddymodule
