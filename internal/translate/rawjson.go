package translate

import (
	"bytes"
	"encoding/json"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
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
	membersEnd(raw, fn)
}

// membersEnd is members for an object followed by more bytes: it returns
// the index after the object's closing brace, or -1 when there is none.
func membersEnd(raw []byte, fn func(key []byte, val json.RawMessage)) int {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return -1
	}
	i++
	for {
		i = jsonscan.SkipSpace(raw, i)
		if i >= len(raw) {
			return -1
		}
		if raw[i] == '}' {
			return i + 1
		}
		if raw[i] == ',' {
			i++
			continue
		}
		if raw[i] != '"' {
			return -1
		}
		ke, ok := jsonscan.StringEnd(raw, i)
		if !ok {
			return -1
		}
		key := raw[i+1 : ke-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			if s, ok := unquote(raw[i:ke]); ok {
				key = []byte(s)
			}
		}
		i = jsonscan.SkipSpace(raw, ke)
		if i >= len(raw) || raw[i] != ':' {
			return -1
		}
		i = jsonscan.SkipSpace(raw, i+1)
		ve, ok := jsonscan.ValueEnd(raw, i)
		if !ok {
			ve = len(raw) // unterminated: report the rest, then stop
		}
		if ve <= i {
			return -1
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

// pick sets vals[i] to the value of the member keys[i] of the object raw
// (the last one when a key repeats, as encoding/json does) and returns
// the first member name that is not among keys and the number of members.
// It is the one decoder of the small objects of a request: messages,
// content parts, tool calls and tool definitions.
func pick(raw []byte, keys []string, vals []json.RawMessage) (unknown string, n int) {
	unknown, n, _ = pickEnd(raw, keys, vals)
	return unknown, n
}

// pickEnd is pick for an object followed by more bytes; end is the index
// after the object, or -1.
func pickEnd(raw []byte, keys []string, vals []json.RawMessage) (unknown string, n, end int) {
	end = membersEnd(raw, func(k []byte, v json.RawMessage) {
		n++
		for i, want := range keys {
			if string(k) == want {
				vals[i] = v
				return
			}
		}
		if unknown == "" {
			unknown = string(k)
		}
	})
	return unknown, n, end
}

// elements calls fn for each element of the array raw, in order, and
// returns the first error fn returns. raw must be a validated array
// (isArray); elements do not alias beyond their end.
func elements(raw []byte, fn func(j int, v json.RawMessage) *apierr.Error) *apierr.Error {
	i := jsonscan.SkipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil
	}
	for j := 0; ; j++ {
		i = jsonscan.SkipSpace(raw, i+1)
		if i >= len(raw) || raw[i] == ']' {
			return nil
		}
		end, ok := jsonscan.ValueEnd(raw, i)
		if !ok {
			return nil
		}
		if err := fn(j, raw[i:end:end]); err != nil {
			return err
		}
		i = jsonscan.SkipSpace(raw, end)
		if i >= len(raw) || raw[i] != ',' {
			return nil
		}
	}
}

// emptyArray reports whether raw is an array without elements.
func emptyArray(raw []byte) bool {
	return isArray(raw) && raw[jsonscan.SkipSpace(raw, 1)] == ']'
}
