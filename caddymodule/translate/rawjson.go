package translate

import (
	"bytes"
	"encoding/json"
)

// The helpers in this file walk JSON that has already been validated (the
// whole client body passes json.Valid first). They split objects and
// arrays into raw members without copying or re-validating, which keeps
// Translate to one validation pass plus one light scan of the body. On
// invalid input they stop early and never panic.

// skipWS returns the index of the first non-space byte at or after i.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index after the string token starting at b[i] == '"'.
func stringEnd(b []byte, i int) int {
	i++
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		q := i + j
		n := 0
		for k := q - 1; k >= i && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		i = q + 1
	}
	return len(b)
}

// valueEnd returns the index after the value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return len(b)
	}
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = stringEnd(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	}
	for i < len(b) {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// members calls fn for each member of the object raw with the member's
// unescaped key and its raw value. Later duplicates are reported after
// earlier ones, so assigning in fn gives encoding/json's last-wins rule.
func members(raw []byte, fn func(key []byte, val json.RawMessage)) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return
	}
	i++
	for {
		i = skipWS(raw, i)
		if i >= len(raw) || raw[i] == '}' {
			return
		}
		if raw[i] == ',' {
			i++
			continue
		}
		if raw[i] != '"' {
			return
		}
		ke := stringEnd(raw, i)
		key := raw[i+1 : max(ke-1, i+1)]
		if bytes.IndexByte(key, '\\') >= 0 {
			if s, ok := unquote(raw[i:ke]); ok {
				key = []byte(s)
			}
		}
		i = skipWS(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return
		}
		i = skipWS(raw, i+1)
		ve := valueEnd(raw, i)
		if ve <= i {
			return
		}
		fn(key, raw[i:ve])
		i = ve
	}
}

// elements calls fn for each element of the array raw.
func elements(raw []byte, fn func(i int, val json.RawMessage)) {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return
	}
	i++
	n := 0
	for {
		i = skipWS(raw, i)
		if i >= len(raw) || raw[i] == ']' {
			return
		}
		if raw[i] == ',' {
			i++
			continue
		}
		ve := valueEnd(raw, i)
		if ve <= i {
			return
		}
		fn(n, raw[i:ve])
		n++
		i = ve
	}
}

// splitArray returns the elements of the array raw, or ok=false when raw
// is not an array.
func splitArray(raw json.RawMessage) (out []json.RawMessage, ok bool) {
	if !isArray(raw) {
		return nil, false
	}
	elements(raw, func(_ int, v json.RawMessage) { out = append(out, v) })
	return out, true
}

// typeName returns the string value of a "type" or "role" token; common
// values are returned without allocating.
func typeName(raw json.RawMessage) string {
	if !isString(raw) || len(raw) < 2 {
		return ""
	}
	switch string(raw[1 : len(raw)-1]) {
	case "text":
		return "text"
	case "function":
		return "function"
	case "custom":
		return "custom"
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "tool":
		return "tool"
	case "system":
		return "system"
	case "developer":
		return "developer"
	case "message":
		return "message"
	case "image_url":
		return "image_url"
	case "refusal":
		return "refusal"
	case "function_call":
		return "function_call"
	case "function_call_output":
		return "function_call_output"
	}
	s, _ := unquote(raw)
	return s
}
