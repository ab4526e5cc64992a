// Package jsonscan splits JSON that has already been validated into raw
// values without decoding or copying them. The relay's hot paths use it
// where most of the bytes are strings it never needs to read (reasoning
// ciphertext, long messages): a client body in translate, a stored output
// in the planner. Callers check validity first (json.Valid); on anything
// unexpected the functions report failure rather than guess, and they
// never panic.
package jsonscan

import (
	"bytes"
	"encoding/json"
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace, or len(b).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// StringEnd returns the index after the string token starting at
// b[i] == '"', or false when the string is not terminated.
func StringEnd(b []byte, i int) (int, bool) {
	i++
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, false
		}
		q := i + j
		n := 0 // backslashes before the quote: an odd count escapes it
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1, true
		}
		i = q + 1
	}
	return 0, false
}

// ValueEnd returns the index after the value starting at b[i], or false
// when i is past the end or a string, object or array is not terminated.
// A scalar ends at the next delimiter or whitespace.
func ValueEnd(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return StringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				var ok bool
				if i, ok = StringEnd(b, i); !ok {
					return 0, false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	default:
		for i < len(b) && b[i] != ',' && b[i] != ']' && b[i] != '}' && !isSpace(b[i]) {
			i++
		}
		return i, true
	}
}

// SplitArray returns the elements of the JSON array b (surrounding
// whitespace allowed), each slicing b with its capacity capped, or false
// when b is not one well-formed array.
func SplitArray(b []byte) ([]json.RawMessage, bool) {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	i = SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, SkipSpace(b, i+1) == len(b)
	}
	for {
		end, ok := ValueEnd(b, i)
		if !ok {
			return nil, false
		}
		out = append(out, json.RawMessage(b[i:end:end]))
		i = SkipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = SkipSpace(b, i+1)
		case ']':
			return out, SkipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}
