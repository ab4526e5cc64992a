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
	// A replacement can form a secret again with the Marker's brackets
	// or letters (secret "]0000000" in "]00000000000000"), so passes
	// repeat while one is left; if one still is after maxPasses, the
	// whole text goes.
	for pass := 0; pass <= maxPasses; pass++ {
		found := false
		for _, s := range secrets {
			if !scrubbable(s, pass) || !contains(b, s) {
				continue
			}
			found = true
			n += bytes.Count(b, []byte(s))
			b = bytes.ReplaceAll(b, []byte(s), []byte(Marker))
		}
		if !found {
			return b, n
		}
	}
	for _, s := range secrets {
		if scrubbable(s, 1) && contains(b, s) {
			return []byte(Marker), n + 1
		}
	}
	return b, n
}

// scrubbable reports whether Secrets replaces s in a pass: s must be
// MinSecretLen long, and after the first pass a secret that the Marker
// itself contains is only found inside the Markers.
func scrubbable(s string, pass int) bool {
	return len(s) >= MinSecretLen && (pass == 0 || !strings.Contains(Marker, s))
}

// maxPasses bounds Secrets' passes over one text.
const maxPasses = 8

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
