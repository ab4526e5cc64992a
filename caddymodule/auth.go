package caddymodule

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// authenticate reports whether r carries one of the relay tokens as a
// bearer token. The presented token is hashed and compared with every
// configured token's hash in constant time, without stopping at a match,
// so neither the token nor which token matched leaks through timing.
func (h *Handler) authenticate(r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	const prefix = "bearer "
	if len(auth) <= len(prefix) || !strings.EqualFold(auth[:len(prefix)], prefix) {
		return false
	}
	presented := sha256.Sum256([]byte(strings.TrimSpace(auth[len(prefix):])))
	ok := 0
	for i := range h.tokens {
		ok |= subtle.ConstantTimeCompare(presented[:], h.tokens[i][:])
	}
	return ok == 1
}
