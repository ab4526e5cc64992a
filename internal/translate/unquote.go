package translate

import (
	"bytes"
	"unicode/utf16"
	"unicode/utf8"
)

// unquote decodes a JSON string token the way encoding/json does: escapes
// resolved, an unpaired surrogate escape or a byte that is not UTF-8
// replaced by U+FFFD. It reports false for anything that is not a string
// token.
func unquote(raw []byte) (string, bool) {
	if !isString(raw) || len(raw) < 2 || raw[len(raw)-1] != '"' {
		return "", false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		if bytes.IndexByte(inner, '"') >= 0 || hasControl(inner) {
			return "", false
		}
		return string(inner), true
	}
	b, ok := appendUnquoted(make([]byte, 0, len(inner)), raw)
	if !ok {
		return "", false
	}
	return string(b), true
}

// hasControl reports whether b holds a byte below 0x20, which a JSON
// string must escape.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// appendUnquoted appends the text of the JSON string token raw to dst, as
// unquote decodes it.
func appendUnquoted(dst, raw []byte) ([]byte, bool) {
	if !isString(raw) || len(raw) < 2 || raw[len(raw)-1] != '"' {
		return dst, false
	}
	s := raw[1 : len(raw)-1]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return dst, false
			}
			switch s[i+1] {
			case '"', '\\', '/':
				dst = append(dst, s[i+1])
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if len(s)-i >= 6 && s[i] == '\\' && s[i+1] == 'u' {
						if r2, ok := hex4(s[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								i += 6
								dst = utf8.AppendRune(dst, dec)
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] >= 0x20 && s[j] < utf8.RuneSelf && s[j] != '\\' && s[j] != '"' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
	}
	return dst, true
}

// hex4 decodes the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
