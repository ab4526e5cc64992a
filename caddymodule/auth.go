package caddymodule

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

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
