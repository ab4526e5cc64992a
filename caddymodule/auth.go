package caddymodule

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// authenticate checks the client's relay token and keeps it (it is part of
// the cache scope). On failure it has answered 401.
func (rq *request) authenticate() bool {
	token, ok := rq.h.authenticate(rq.r)
	if !ok {
		rq.w.Header().Set("WWW-Authenticate", `Bearer realm="reasoning_relay"`)
		rq.fail(apierr.New(http.StatusUnauthorized, apierr.TypeInvalidRequest, "invalid_api_key",
			"Incorrect API key provided: send a relay token as 'Authorization: Bearer <token>'."), "unauthorized")
		return false
	}
	rq.token = token
	return true
}

// authenticate returns the bearer token r carries and whether it is one of
// the relay tokens. The presented token is hashed and compared with every
// configured token's hash in constant time, without stopping at a match,
// so neither the token nor which token matched leaks through timing.
func (h *Handler) authenticate(r *http.Request) (string, bool) {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return "", false
	}
	token := strings.TrimSpace(auth[len(prefix):])
	presented := sha256.Sum256([]byte(token))
	ok := 0
	for i := range h.tokens {
		ok |= subtle.ConstantTimeCompare(presented[:], h.tokens[i][:])
	}
	return token, ok == 1
}
