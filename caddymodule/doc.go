// Package caddymodule plugs the reasoning relay into Caddy: the HTTP handler
// http.handlers.reasoning_relay (Caddyfile directive reasoning_relay) and
// its Caddyfile parsing, the reasoning_cache app that owns the ledger, the
// admin API routes under /reasoning_cache/ and the `caddy reasoning-relay`
// CLI commands. It is thin: the work is done by the Caddy-free packages
// under internal/ (translate, transport, redact, bodylog for body logging,
// bundle for replay bundles, apierr) and by the engine, reasoningcache. chat.go holds
// the relay's central sequence (serveChat); its steps live in files named
// after them: admit.go (authenticate, read the body), cachesession.go
// (the engine's Prepare, Complete and the session's end), upstream.go
// (the upstream POST) and answer.go (writing the JSON answer or the event
// stream). README.md's Development section maps the other files.
package caddymodule
