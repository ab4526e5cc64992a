package translate

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. It escapes what encoding/json
// escapes except the HTML characters, and replaces invalid UTF-8 with
// U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendInt appends n in decimal.
func appendInt(dst []byte, n int64) []byte { return strconv.AppendInt(dst, n, 10) }

// isNull reports whether raw is absent or the JSON literal null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || (len(raw) == 4 && string(raw) == "null")
}

// isString reports whether raw is a JSON string token.
func isString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

// isObject reports whether raw is a JSON object.
func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// isArray reports whether raw is a JSON array.
func isArray(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '[' }

// isBool reports whether raw is true or false.
func isBool(raw json.RawMessage) bool { return string(raw) == "true" || string(raw) == "false" }

// isNumber reports whether raw is a JSON number.
func isNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

// objectWriter builds a JSON object with keys in the order they are added.
type objectWriter struct{ b []byte }

func (w *objectWriter) raw(key string, v json.RawMessage) {
	if len(w.b) == 0 {
		w.b = append(w.b, '{')
	} else {
		w.b = append(w.b, ',')
	}
	w.b = appendString(w.b, key)
	w.b = append(w.b, ':')
	w.b = append(w.b, v...)
}

func (w *objectWriter) str(key, v string) {
	w.raw(key, appendString(nil, v))
}

func (w *objectWriter) bytes() json.RawMessage {
	if len(w.b) == 0 {
		return json.RawMessage("{}")
	}
	return append(w.b, '}')
}
