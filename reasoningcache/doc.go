// Package reasoningcache is the reasoning cache engine: canonical identity
// of a request's scope and visible history (package canonical), the
// crash-safe SQLite ledger (package ledger) and, at the package root, the
// planner that decides which earlier assistant turns can be replaced by
// their original Responses output blocks. It imports nothing from Caddy.
package reasoningcache
