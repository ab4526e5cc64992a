// Package caddymodule plugs the reasoning relay into Caddy: the HTTP handler
// http.handlers.reasoning_relay (Caddyfile directive reasoning_relay), its
// Caddyfile parsing, and (in later files) the reasoning_cache app, admin
// routes and CLI commands. It is thin: the work is done by the packages
// below it (translate, transport) and by reasoningcache.
package caddymodule
