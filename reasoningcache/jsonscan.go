package reasoningcache

import "encoding/json"

// A small scanner for the planner's hot path: it splits a stored output
// array into its items and reads an item's "type", "role" and "call_id"
// without decoding the rest (reasoning ciphertext is most of the bytes).
// Callers check validity first (json.Valid); on anything unexpected the
// scanner reports failure rather than guessing.

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// skipString returns the index after the string starting at b[i] == '"'.
func skipString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the value starting at b[i].
func skipValue(b []byte, i int) (int, bool) {
	if i >= len(b) {
		return 0, false
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				var ok bool
				if i, ok = skipString(b, i); !ok {
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

// splitArray returns the elements of a valid JSON array, each slicing b.
func splitArray(b []byte) ([]json.RawMessage, bool) {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil, false
	}
	var out []json.RawMessage
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		return out, skipSpace(b, i+1) == len(b)
	}
	for {
		end, ok := skipValue(b, i)
		if !ok {
			return nil, false
		}
		out = append(out, json.RawMessage(b[i:end:end]))
		i = skipSpace(b, end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case ']':
			return out, skipSpace(b, i+1) == len(b)
		default:
			return nil, false
		}
	}
}

// headOf reads an item's type, role and call_id.
func headOf(item []byte) (itemHead, bool) {
	var h itemHead
	i := skipSpace(item, 0)
	if i >= len(item) || item[i] != '{' {
		return h, false
	}
	i = skipSpace(item, i+1)
	if i < len(item) && item[i] == '}' {
		return h, true
	}
	for {
		if i >= len(item) || item[i] != '"' {
			return h, false
		}
		kend, ok := skipString(item, i)
		if !ok {
			return h, false
		}
		key := item[i+1 : kend-1]
		i = skipSpace(item, kend)
		if i >= len(item) || item[i] != ':' {
			return h, false
		}
		i = skipSpace(item, i+1)
		vend, ok := skipValue(item, i)
		if !ok {
			return h, false
		}
		var dst *string
		switch string(key) {
		case "type":
			dst = &h.Type
		case "role":
			dst = &h.Role
		case "call_id":
			dst = &h.CallID
		default:
			for _, c := range key {
				if c == '\\' { // an escaped key: let the real decoder decide
					err := json.Unmarshal(item, &h)
					return h, err == nil
				}
			}
		}
		if dst != nil {
			*dst = ""
			if item[i] == '"' {
				if err := json.Unmarshal(item[i:vend], dst); err != nil {
					return h, false
				}
			}
		}
		i = skipSpace(item, vend)
		if i >= len(item) {
			return h, false
		}
		switch item[i] {
		case ',':
			i = skipSpace(item, i+1)
		case '}':
			return h, true
		default:
			return h, false
		}
	}
}
