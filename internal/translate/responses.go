package translate

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// translateResponses forwards a Responses-shaped body: the same alias,
// reasoning defaults and store/include rules as a Chat body; stream_options
// is consumed; every other field passes through untouched.
func translateResponses(req *Request, top map[string]json.RawMessage, fs fieldSet, alias Alias, cfg *Config) *apierr.Error {
	var p policy
	for _, k := range sortedKeys(top) {
		v := top[k]
		if isNull(v) {
			switch k {
			case "model", "input":
			case "stream", "stream_options", "reasoning", "text", "store", "include":
				// null means "not set"; defaults and forced values apply.
				continue
			default:
				fs[k] = v
				continue
			}
		}
		switch k {
		case "model", "input":
		case "stream", "stream_options":
			// stream_options is consumed: include_obfuscation is dropped
			if _, aerr := streamField(req, fs, k, v); aerr != nil {
				return aerr
			}
		case "reasoning":
			var r struct {
				Effort  json.RawMessage `json:"effort"`
				Summary json.RawMessage `json:"summary"`
			}
			if !isObject(v) || json.Unmarshal(v, &r) != nil {
				return invalidType(k, "an object")
			}
			if !isNull(r.Effort) {
				s, ok := unquote(r.Effort)
				if !ok {
					return invalidType("reasoning.effort", "a string")
				}
				p.effort = s
			}
			p.summary = !isNull(r.Summary)
			p.reasoning = v
		case "text":
			var tx struct {
				Verbosity json.RawMessage `json:"verbosity"`
			}
			if !isObject(v) || json.Unmarshal(v, &tx) != nil {
				return invalidType(k, "an object")
			}
			p.verbosity = !isNull(tx.Verbosity)
			p.text = v
		case "store":
			if !isBool(v) {
				return invalidType(k, "a boolean")
			}
			p.store = v
		case "include":
			if !isArray(v) {
				return invalidType(k, "an array of strings")
			}
			p.include = v
		default:
			fs[k] = v
		}
	}
	if aerr := responsesInput(req, top["input"]); aerr != nil {
		return aerr
	}
	return applyPolicy(req, alias, cfg, p, fs)
}

// inputItemKeys are the members of an input item that classify it.
var inputItemKeys = []string{"type", "role"}

// inputItem holds the members of an input item that classify it.
type inputItem struct {
	Type string
	Role string
}

func responsesInput(req *Request, raw json.RawMessage) *apierr.Error {
	if isNull(raw) {
		return missing("input")
	}
	if isString(raw) {
		if string(raw) == `""` {
			return invalidValue("input", "Invalid 'input': empty string.")
		}
		b := make([]byte, 0, len(raw)+48)
		b = append(b, `{"type":"message","role":"user","content":`...)
		b = append(b, raw...)
		b = append(b, '}')
		req.Input = []json.RawMessage{b}
		req.History = []Message{{Raw: b, Role: "user", Items: [2]int{0, 1}}}
		return nil
	}
	items, ok := jsonscan.SplitArray(raw)
	if !ok {
		return invalidType("input", "a string or an array of input items")
	}
	if len(items) == 0 {
		return invalidValue("input", "Invalid 'input': empty array. Expected an array with minimum length 1.")
	}
	req.Input = items
	req.History = make([]Message, len(items))
	for i, it := range items {
		if !isObject(it) {
			return invalidType(fmt.Sprintf("input[%d]", i), "an input item object")
		}
		var v [2]json.RawMessage
		pick(it, inputItemKeys, v[:])
		ii := inputItem{Type: typeName(v[0]), Role: typeName(v[1])}
		req.History[i] = Message{Raw: it, Role: itemRole(ii), Items: [2]int{i, i + 1}}
	}
	return nil
}

// itemRole returns the visible-history role of a Responses input item.
func itemRole(ii inputItem) string {
	switch {
	case ii.Role != "":
		return ii.Role
	case strings.HasSuffix(ii.Type, "_output"):
		return "tool"
	case ii.Type == "reasoning" || strings.HasSuffix(ii.Type, "_call"):
		return "assistant"
	}
	return ""
}
