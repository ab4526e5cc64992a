package translate

import (
	"bytes"
	"encoding/json"
	"unsafe"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// assistant translates an assistant message into an optional message item
// followed by its tool calls.
func (t *chatTranslator) assistant(l loc, cm *chatMessage) *apierr.Error {
	if !isNull(cm.FunctionCall) {
		return unsupportedParam(l.at(".function_call"), "is deprecated and not supported; use tool_calls")
	}
	from := t.begin()
	t.out = append(t.out, `{"type":"message","role":"assistant","content":[`...)
	parts := 0 // output content parts written
	addPart := func(kind string, val json.RawMessage) {
		if parts > 0 {
			t.out = append(t.out, ',')
		}
		parts++
		if kind == "refusal" {
			t.out = append(t.out, `{"type":"refusal","refusal":`...)
			t.out = append(t.out, val...)
			t.out = append(t.out, '}')
			return
		}
		t.out = append(t.out, `{"type":"output_text","text":`...)
		t.out = append(t.out, val...)
		t.out = append(t.out, `,"annotations":[]}`...)
	}
	switch {
	case isNull(cm.Content):
	case isString(cm.Content):
		if string(cm.Content) != `""` {
			addPart("text", cm.Content)
		}
	default:
		aerr := eachPart(l, cm.Content, func(pl loc, p chatPart, _ json.RawMessage) *apierr.Error {
			switch p.Type {
			case "text", "output_text":
				if !isString(p.Text) {
					return invalidType(pl.at(".text"), "a string")
				}
				addPart("text", p.Text)
			case "refusal":
				if !isString(p.Refusal) {
					return invalidType(pl.at(".refusal"), "a string")
				}
				addPart("refusal", p.Refusal)
			default:
				return invalidValue(pl.at(".type"), "Invalid content part type for an assistant message.")
			}
			return nil
		})
		if aerr != nil {
			return aerr
		}
	}
	// an empty refusal is no refusal: SDK accumulators echo "refusal":""
	if !isNull(cm.Refusal) && string(cm.Refusal) != `""` {
		if !isString(cm.Refusal) {
			return invalidType(l.at(".refusal"), "a string")
		}
		addPart("refusal", cm.Refusal)
	}
	hasCalls := false
	if !isNull(cm.ToolCalls) {
		if !isArray(cm.ToolCalls) {
			return invalidType(l.at(".tool_calls"), "an array")
		}
		hasCalls = !emptyArray(cm.ToolCalls)
	}
	switch {
	case parts == 0 && hasCalls:
		t.out = t.out[:from] // calls only: no message item
	default:
		if parts == 0 {
			addPart("text", json.RawMessage(`""`))
		}
		t.out = append(t.out, ']', '}')
		t.end(from)
	}
	if !hasCalls {
		return nil
	}
	return elements(cm.ToolCalls, func(k int, raw json.RawMessage) *apierr.Error {
		return t.toolCall(loc{i: l.i, sub: ".tool_calls", j: k}, raw)
	})
}

var (
	toolCallKeys = []string{"id", "type", "function", "custom"}
	callBodyKeys = []string{"name", "arguments", "input"}
)

// callBody is the function or custom object of a tool call.
type callBody struct {
	Name, Arguments, Input json.RawMessage
}

// decodeCallBody decodes a tool call's function or custom object; ok is
// false when raw is not an object.
func decodeCallBody(raw json.RawMessage) (c callBody, ok bool) {
	if !isObject(raw) {
		return c, false
	}
	var v [3]json.RawMessage
	pick(raw, callBodyKeys, v[:])
	return callBody{Name: v[0], Arguments: v[1], Input: v[2]}, true
}

// isCustomTool reports whether the string token name names a custom tool
// of this request.
func (t *chatTranslator) isCustomTool(name json.RawMessage) bool {
	return hasToken(t.customTools, name)
}

// hasToken reports whether the set m holds the string token tok, without
// allocating for a token without escapes.
func hasToken(m map[string]bool, tok json.RawMessage) bool {
	if len(m) == 0 || !isString(tok) {
		return false
	}
	if inner := tok[1 : len(tok)-1]; bytes.IndexByte(inner, '\\') < 0 {
		return m[string(inner)]
	}
	s, ok := unquote(tok)
	return ok && m[s]
}

// toolCall appends the function_call or custom_tool_call item of one
// assistant tool call.
func (t *chatTranslator) toolCall(l loc, raw json.RawMessage) *apierr.Error {
	if !isObject(raw) {
		return invalidType(l.String(), "a tool call object")
	}
	var v [4]json.RawMessage
	pick(raw, toolCallKeys, v[:])
	id, typ := v[0], typeName(v[1])
	if !isString(id) || string(id) == `""` {
		return missing(l.at(".id"))
	}
	var name, payload json.RawMessage
	var payloadParam string
	custom := false
	if c, ok := decodeCallBody(v[2]); (typ == "function" || typ == "") && ok {
		name, payload, payloadParam = c.Name, c.Arguments, ".function.arguments"
		// a custom call we returned to Cursor as a function call
		custom = t.isCustomTool(name)
		if !isString(name) {
			return missing(l.at(".function.name"))
		}
		if string(name) == `""` {
			return emptyName(l.at(".function.name"))
		}
	} else if c, ok := decodeCallBody(v[3]); typ == "custom" && ok {
		name, payload, payloadParam = c.Name, c.Input, ".custom.input"
		custom = true
		if !isString(name) {
			return missing(l.at(".custom.name"))
		}
		if string(name) == `""` {
			return emptyName(l.at(".custom.name"))
		}
	} else {
		return invalidValue(l.at(".type"), "Invalid tool call: expected type 'function' or 'custom' with its object.")
	}
	if isNull(payload) {
		payload = json.RawMessage(`""`)
	} else if !isString(payload) {
		return invalidType(l.at(payloadParam), "a string")
	}
	from := t.begin()
	if custom {
		if t.customCalls == nil {
			t.customCalls = make(map[string]bool)
		}
		t.customCalls[t.keep(id)] = true
		t.out = append(t.out, `{"type":"custom_tool_call","call_id":`...)
	} else {
		t.out = append(t.out, `{"type":"function_call","call_id":`...)
	}
	t.out = append(t.out, id...)
	t.out = append(t.out, `,"name":`...)
	t.out = append(t.out, name...)
	if custom {
		t.out = append(t.out, `,"input":`...)
	} else {
		t.out = append(t.out, `,"arguments":`...)
	}
	t.out = append(t.out, payload...)
	t.out = append(t.out, '}')
	t.end(from)
	return nil
}

// isCustomCall reports whether the string token id is the call id of a
// custom tool call earlier in the history.
func (t *chatTranslator) isCustomCall(id json.RawMessage) bool { return hasToken(t.customCalls, id) }

// toolResult translates a tool message into a function_call_output or
// custom_tool_call_output item.
func (t *chatTranslator) toolResult(l loc, cm *chatMessage) *apierr.Error {
	id := cm.ToolCallID
	if !isString(id) || string(id) == `""` {
		return missing(l.at(".tool_call_id"))
	}
	var output json.RawMessage
	switch {
	case isNull(cm.Content):
		output = json.RawMessage(`""`)
	case isString(cm.Content):
		output = cm.Content
	default:
		joined := t.scratch[:0]
		aerr := eachPart(l, cm.Content, func(pl loc, p chatPart, _ json.RawMessage) *apierr.Error {
			if p.Type != "text" && p.Type != "input_text" {
				return invalidValue(pl.at(".type"), "Invalid content part type for a tool message: only text parts are supported.")
			}
			s, ok := unquote(p.Text)
			if !ok {
				return invalidType(pl.at(".text"), "a string")
			}
			joined = append(joined, s...)
			return nil
		})
		if aerr != nil {
			return aerr
		}
		t.scratch = joined
		output = appendString(nil, string(joined))
	}
	from := t.begin()
	if t.isCustomCall(id) {
		t.out = append(t.out, `{"type":"custom_tool_call_output","call_id":`...)
	} else {
		t.out = append(t.out, `{"type":"function_call_output","call_id":`...)
	}
	t.out = append(t.out, id...)
	t.out = append(t.out, `,"output":`...)
	t.out = append(t.out, output...)
	t.out = append(t.out, '}')
	t.end(from)
	return nil
}

// keep returns the text of the string token tok as a string that shares
// the memory of t.ids, so that remembering a call id costs no allocation
// of its own. Bytes of t.ids are only ever appended, never changed, so the
// strings stay valid when t.ids grows into a new array.
func (t *chatTranslator) keep(tok json.RawMessage) string {
	from := len(t.ids)
	t.ids, _ = appendUnquoted(t.ids, tok)
	if len(t.ids) == from {
		return ""
	}
	return unsafe.String(&t.ids[from], len(t.ids)-from)
}
