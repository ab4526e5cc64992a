package caddymodule

import (
	"crypto/rand"
	"encoding/hex"
)

// newRequestID returns a random request ID such as
// "rr_5f3a9c0d1e2b4a6c8d9e0f1a" (96 bits, unique across restarts).
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "rr_" + hex.EncodeToString(b[:])
}
