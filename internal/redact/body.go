package redact

import (
	"bytes"
	"errors"
)

// minKeyTail is how many token characters must follow "sk-" for the
// string to be taken as an API key.
const minKeyTail = 16

// minBearer is how many token characters must follow "Bearer " for the
// string to be taken as a credential.
const minBearer = 8

// MinSecretLen is the shortest secret Body and Text replace literally:
// shorter values would hit ordinary words (and make weak credentials
// anyway).
const MinSecretLen = 8

// Body returns b with every occurrence of the given secrets (those shorter
// than MinSecretLen are ignored) and every credential-shaped token
// replaced by Marker, and how
// many replacements were made. Credential-shaped tokens are OpenAI-style
// keys ("sk-" followed by at least 16 of [A-Za-z0-9_-]) and bearer
// credentials ("Bearer " followed by at least 8 token characters). When
// nothing is replaced, b itself is returned.
func Body(b []byte, secrets ...string) ([]byte, int) {
	b, n := Secrets(b, secrets...)
	b, k := replaceShaped(b, []byte("sk-"), minKeyTail, false)
	n += k
	b, k = replaceShaped(b, []byte("Bearer "), minBearer, true)
	n += k
	return b, n
}

// CheckBody reports an error when b still holds a credential-shaped token,
// that is when it is not in the form Body produces.
func CheckBody(b []byte) error {
	if _, k := replaceShaped(b, []byte("sk-"), minKeyTail, false); k > 0 {
		return errors.New("body holds an API key")
	}
	if _, k := replaceShaped(b, []byte("Bearer "), minBearer, true); k > 0 {
		return errors.New("body holds a bearer credential")
	}
	return nil
}

// replaceShaped replaces prefix+tail, where tail is at least min token
// characters and prefix starts a word, by Marker (keepPrefix keeps the
// prefix: "Bearer [REDACTED]"). It allocates only when it replaces.
func replaceShaped(b, prefix []byte, min int, keepPrefix bool) ([]byte, int) {
	var out []byte
	n, last, i := 0, 0, 0
	for {
		j := bytes.Index(b[i:], prefix)
		if j < 0 {
			break
		}
		start := i + j
		end := start + len(prefix)
		for end < len(b) && isTokenChar(b[end]) {
			end++
		}
		i = start + len(prefix)
		if (start > 0 && isTokenChar(b[start-1])) || end-(start+len(prefix)) < min {
			continue
		}
		if out == nil {
			out = make([]byte, 0, len(b))
		}
		out = append(out, b[last:start]...)
		if keepPrefix {
			out = append(out, prefix...)
		}
		out = append(out, Marker...)
		last, i = end, end
		n++
	}
	if n == 0 {
		return b, 0
	}
	return append(out, b[last:]...), n
}

// isTokenChar reports whether c can be part of a key or bearer token.
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '_' || c == '.' || c == '~' || c == '+' || c == '/' || c == '='
}
