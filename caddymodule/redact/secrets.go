package redact

import (
	"bytes"
	"strings"
)

// Secrets returns b with every occurrence of the given secrets (those
// shorter than MinSecretLen are ignored) replaced by Marker, and how many
// replacements were made. Unlike Body it leaves credential-shaped tokens
// alone, so it can run over anything the relay sends to a client (model
// output may legitimately show an "sk-…" example) while still guaranteeing
// that the relay's own credentials, which it knows exactly, never leave.
// When nothing is replaced, b itself is returned.
func Secrets(b []byte, secrets ...string) ([]byte, int) {
	n := 0
	for _, s := range secrets {
		if len(s) < MinSecretLen || !bytes.Contains(b, []byte(s)) {
			continue
		}
		n += bytes.Count(b, []byte(s))
		b = bytes.ReplaceAll(b, []byte(s), []byte(Marker))
	}
	return b, n
}

// SecretsText is Secrets for a string.
func SecretsText(s string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= MinSecretLen && strings.Contains(s, sec) {
			b, _ := Secrets([]byte(s), secrets...)
			return string(b)
		}
	}
	return s
}
