package caddymodule

import (
	"net/http"
	"strings"
)

// effectiveOpenAIBeta is the OpenAI-Beta feature list the upstream sees:
// every value of every OpenAI-Beta header line (all of them are
// forwarded), split at commas, trimmed and joined with "," in the order
// they arrive. It goes into the cache scope, so that two requests share a
// scope only if the upstream saw the same features for both. The order is
// kept and nothing is deduplicated: two spellings of one set then get
// different scopes, which costs a replay at most, never a wrong one.
func effectiveOpenAIBeta(h http.Header) string {
	var parts []string
	for _, v := range h.Values("OpenAI-Beta") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				parts = append(parts, p)
			}
		}
	}
	return strings.Join(parts, ",")
}
