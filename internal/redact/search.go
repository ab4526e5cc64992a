package redact

import (
	"bytes"
	"unsafe"
)

// contains reports whether b holds the secret s. It is the check Secrets
// runs on every frame the relay writes, nearly always with no secret in
// it, so it allocates nothing. In a large text it searches for the part of
// s that begins with its rarest byte (credentials start with common
// letters such as the "s" of "sk-"; text rarely has their digits and
// capitals), then compares the whole secret around each hit.
func contains(b []byte, s string) bool {
	if len(b) < probeMin {
		return bytes.Contains(b, unsafe.Slice(unsafe.StringData(s), len(s)))
	}
	off := rarest(s[:min(len(s), 32)])
	probe := unsafe.Slice(unsafe.StringData(s[off:]), min(len(s)-off, 16))
	for i := off; i <= len(b)-(len(s)-off); {
		j := bytes.Index(b[i:], probe)
		if j < 0 {
			return false
		}
		at := i + j - off
		if at+len(s) <= len(b) && string(b[at:at+len(s)]) == s {
			return true
		}
		i += j + 1
	}
	return false
}

// probeMin is the text size from which contains searches for a probe: in
// a shorter text, choosing one costs more than it saves.
const probeMin = 2048

// rarest returns the index of the byte of s least likely in text, by a
// rough class ranking: rare ASCII punctuation and control bytes, then
// digits and capitals, then everything else; ties go to the first.
func rarest(s string) int {
	best, bestRank := 0, 4
	for i := 0; i < len(s) && bestRank > 0; i++ {
		if r := rank(s[i]); r < bestRank {
			best, bestRank = i, r
		}
	}
	return best
}

// rank classes a byte by how often it appears in model text and JSON
// (lower is rarer).
func rank(c byte) int {
	switch {
	case c >= 'a' && c <= 'z', c == ' ', c == '"', c == ',', c == '.', c == ':', c == '-', c == '_', c == '\\':
		return 3
	case c >= '0' && c <= '9':
		return 2
	case c >= 'A' && c <= 'Z':
		return 1
	}
	return 0
}
