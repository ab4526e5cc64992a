package canonical

import (
	"encoding/hex"
	"fmt"
)

// Digest is a SHA-256 output. Its text form (String, MarshalText) is 64
// lowercase hex digits, the form the ledger stores.
type Digest [32]byte

// String returns the lowercase hex form of d.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// MarshalText implements encoding.TextMarshaler.
func (d Digest) MarshalText() ([]byte, error) {
	out := make([]byte, hex.EncodedLen(len(d)))
	hex.Encode(out, d[:])
	return out, nil
}

// UnmarshalText implements encoding.TextUnmarshaler; it accepts only the
// 64-digit lowercase form.
func (d *Digest) UnmarshalText(text []byte) error {
	p, err := ParseDigest(string(text))
	if err != nil {
		return err
	}
	*d = p
	return nil
}

// ParseDigest parses the 64-digit lowercase hex form written by String.
func ParseDigest(s string) (Digest, error) {
	var d Digest
	if len(s) != 2*len(d) {
		return d, fmt.Errorf("canonical: parse digest: length %d, want %d", len(s), 2*len(d))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return d, fmt.Errorf("canonical: parse digest: invalid character at %d", i)
		}
	}
	if _, err := hex.Decode(d[:], []byte(s)); err != nil {
		return d, fmt.Errorf("canonical: parse digest: %w", err)
	}
	return d, nil
}
