package bundle

import "crypto/rand"

// randRead fills b with random bytes (temporary file names).
func randRead(b []byte) (int, error) { return rand.Read(b) }
