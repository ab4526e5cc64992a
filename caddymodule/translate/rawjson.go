package translate

import (
	"bytes"
	"encoding/json"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// The helpers in this file walk JSON that has already been validated (the
// whole client body passes json.Valid first). They split objects (members)
// and arrays (jsonscan.SplitArray) into raw members without copying or
// re-validating, which keeps Translate to one validation pass plus one
// light scan of the body. On invalid input they stop early and never
// panic.

// members calls fn for each member of the object raw with the member's
// unescaped key and its raw value. Later duplicates are reported after
// earlier ones, so assigning in fn gives encoding/json's last-wins rule.
func members(raw []byte, fn func(key []byte, val json.RawMessage)) {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return
	}
	i++
	for {
		i = jsonscan.SkipSpace(raw, i)
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
		ke, ok := jsonscan.StringEnd(raw, i)
		if !ok {
			return
		}
		key := raw[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			if s, ok := unquote(raw[i:ke]); ok {
				key = []byte(s)
			}
		}
		i = jsonscan.SkipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return
		}
		i = jsonscan.SkipSpace(raw, i+1)
		ve, ok := jsonscan.ValueEnd(raw, i)
		if !ok {
			ve = len(raw) // unterminated: report the rest, then stop
		}
		if ve <= i {
			return
		}
		fn(key, raw[i:ve])
		i = ve
	}
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
