package reasoningcache

import (
	"encoding/json"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// The planner's hot path splits a stored output array into its items
// (jsonscan.SplitArray) and reads an item's "type", "role" and "call_id"
// without decoding the rest (reasoning ciphertext is most of the bytes).
// Callers check validity first (json.Valid); on anything unexpected the
// scanner reports failure rather than guessing.

// headOf reads an item's type, role and call_id.
func headOf(item []byte) (itemHead, bool) {
	var h itemHead
	i := jsonscan.SkipSpace(item, 0)
	if i >= len(item) || item[i] != '{' {
		return h, false
	}
	i = jsonscan.SkipSpace(item, i+1)
	if i < len(item) && item[i] == '}' {
		return h, true
	}
	for {
		if i >= len(item) || item[i] != '"' {
			return h, false
		}
		kend, ok := jsonscan.StringEnd(item, i)
		if !ok {
			return h, false
		}
		key := item[i+1 : kend-1]
		i = jsonscan.SkipSpace(item, kend)
		if i >= len(item) || item[i] != ':' {
			return h, false
		}
		i = jsonscan.SkipSpace(item, i+1)
		vend, ok := jsonscan.ValueEnd(item, i)
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
		i = jsonscan.SkipSpace(item, vend)
		if i >= len(item) {
			return h, false
		}
		switch item[i] {
		case ',':
			i = jsonscan.SkipSpace(item, i+1)
		case '}':
			return h, true
		default:
			return h, false
		}
	}
}
