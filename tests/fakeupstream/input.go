package fakeupstream

import (
	"fmt"
	"strings"
)

// inputItem is one validated item of the request's input.
type inputItem struct {
	Type      string   // message, function_call, function_call_output, custom_tool_call, custom_tool_call_output, reasoning
	Role      string   // message role
	Phase     string   // message phase, if any
	ID        string   // item id, if any
	CallID    string   // call_id of calls and outputs
	Name      string   // tool name of calls
	Text      string   // message: text parts joined with "\n"
	Parts     []string // message: content part types ("string" for string content)
	Encrypted string   // reasoning: encrypted_content ("" when absent or null)
}

// inputItemTypes are the item types the fake accepts.
var inputItemTypes = []string{"message", "function_call", "function_call_output",
	"custom_tool_call", "custom_tool_call_output", "reasoning", "item_reference"}

// parseInput validates input: a string, or an array of items (WIRE §3.2).
func parseInput(v any) ([]inputItem, *apiError) {
	if s, ok := v.(string); ok {
		return []inputItem{{Type: "message", Role: "user", Text: s, Parts: []string{"string"}}}, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errType("input", "a string or an array", v)
	}
	items := make([]inputItem, 0, len(arr))
	calls := map[string]string{} // call_id -> call item type
	ids := map[string]bool{}
	for i, e := range arr {
		param := index("input", i)
		o, err := asObject(e, param)
		if err != nil {
			return nil, err
		}
		typ, _, err := optString(o, "type", param)
		if err != nil {
			return nil, err
		}
		if typ == "" {
			if _, hasRole := o["role"]; !hasRole {
				return nil, errMissing(path(param, "type"))
			}
			typ = "message"
		}
		var it inputItem
		switch typ {
		case "message":
			it, err = parseMessage(o, param)
		case "function_call", "custom_tool_call":
			it, err = parseCall(o, param, typ)
		case "function_call_output", "custom_tool_call_output":
			it, err = parseCallOutput(o, param, typ, calls)
		case "reasoning":
			it, err = parseReasoning(o, param)
		case "item_reference":
			it, err = parseItemReference(o, param)
		default:
			err = errValue(path(param, "type"), typ, inputItemTypes)
		}
		if err != nil {
			return nil, err
		}
		if it.ID != "" {
			if ids[it.ID] {
				return nil, invalidRequest("input", "",
					fmt.Sprintf("Duplicate item found with id %s. Remove duplicate items from your input and try again.", it.ID))
			}
			ids[it.ID] = true
		}
		if typ == "function_call" || typ == "custom_tool_call" {
			calls[it.CallID] = typ
		}
		items = append(items, it)
	}
	return items, nil
}

// parseMessage validates an easy-form or output message.
func parseMessage(o object, param string) (inputItem, *apiError) {
	if err := checkKeys(o, param, "type", "role", "content", "phase", "id", "status"); err != nil {
		return inputItem{}, err
	}
	if _, ok := o["role"]; !ok {
		return inputItem{}, errMissing(path(param, "role"))
	}
	role, err := optEnum(o, "role", param, "user", "assistant", "system", "developer")
	if err != nil {
		return inputItem{}, err
	}
	it := inputItem{Type: "message", Role: role}
	if it.Phase, err = optEnum(o, "phase", param, "commentary", "final_answer"); err != nil {
		return inputItem{}, err
	}
	if _, err = optEnum(o, "status", param, "in_progress", "completed", "incomplete"); err != nil {
		return inputItem{}, err
	}
	if it.ID, _, err = optString(o, "id", param); err != nil {
		return inputItem{}, err
	}
	cv, ok := o["content"]
	if !ok || cv == nil {
		return inputItem{}, errMissing(path(param, "content"))
	}
	if s, ok := cv.(string); ok {
		it.Text, it.Parts = s, []string{"string"}
		return it, nil
	}
	parts, ok := cv.([]any)
	if !ok {
		return inputItem{}, errType(path(param, "content"), "a string or an array", cv)
	}
	allowed := []string{"input_text", "input_image", "input_file"}
	switch role {
	case "assistant":
		allowed = []string{"output_text", "refusal"}
	case "system", "developer":
		allowed = []string{"input_text"}
	}
	var texts []string
	for j, pv := range parts {
		pp := index(path(param, "content"), j)
		typ, text, err := parseContentPart(pv, pp, allowed)
		if err != nil {
			return inputItem{}, err
		}
		it.Parts = append(it.Parts, typ)
		if typ == "input_text" || typ == "output_text" {
			texts = append(texts, text)
		}
	}
	it.Text = strings.Join(texts, "\n")
	return it, nil
}

// parseContentPart validates one message content part against the types
// allowed for the message's role and returns its type and text.
func parseContentPart(v any, param string, allowed []string) (string, string, *apiError) {
	p, err := asObject(v, param)
	if err != nil {
		return "", "", err
	}
	typ, err := reqString(p, "type", param)
	if err != nil {
		return "", "", err
	}
	ok := false
	for _, a := range allowed {
		ok = ok || a == typ
	}
	if !ok {
		return "", "", errValue(path(param, "type"), typ, allowed)
	}
	switch typ {
	case "input_text":
		if err := checkKeys(p, param, "type", "text", "prompt_cache_breakpoint"); err != nil {
			return "", "", err
		}
		text, err := textMember(p, "text", param)
		return typ, text, err
	case "output_text":
		if err := checkKeys(p, param, "type", "text", "annotations", "logprobs"); err != nil {
			return "", "", err
		}
		for _, k := range []string{"annotations", "logprobs"} {
			if av, ok := p[k]; ok && av != nil {
				if _, ok := av.([]any); !ok {
					return "", "", errType(path(param, k), "an array", av)
				}
			}
		}
		text, err := textMember(p, "text", param)
		return typ, text, err
	case "refusal":
		if err := checkKeys(p, param, "type", "refusal"); err != nil {
			return "", "", err
		}
		_, err := textMember(p, "refusal", param)
		return typ, "", err
	case "input_image":
		if err := checkKeys(p, param, "type", "detail", "image_url", "file_id", "prompt_cache_breakpoint"); err != nil {
			return "", "", err
		}
		if _, ok := p["detail"]; !ok {
			return "", "", errMissing(path(param, "detail"))
		}
		if _, err := optEnum(p, "detail", param, "auto", "low", "high", "original"); err != nil {
			return "", "", err
		}
		url, hasURL, err := optString(p, "image_url", param)
		if err != nil {
			return "", "", err
		}
		_, hasFile, err := optString(p, "file_id", param)
		if err != nil {
			return "", "", err
		}
		if (!hasURL || url == "") && !hasFile {
			return "", "", errMissing(path(param, "image_url"))
		}
		return typ, "", nil
	default: // input_file
		if err := checkKeys(p, param, "type", "file_data", "file_id", "file_url", "filename", "detail", "prompt_cache_breakpoint"); err != nil {
			return "", "", err
		}
		found := false
		for _, k := range []string{"file_data", "file_id", "file_url"} {
			_, ok, err := optString(p, k, param)
			if err != nil {
				return "", "", err
			}
			found = found || ok
		}
		if _, _, err := optString(p, "filename", param); err != nil {
			return "", "", err
		}
		if !found {
			return "", "", errMissing(path(param, "file_data"))
		}
		return typ, "", nil
	}
}

// textMember reads a required string member that may be empty.
func textMember(o object, key, param string) (string, *apiError) {
	s, ok, err := optString(o, key, param)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", errMissing(path(param, key))
	}
	return s, nil
}

// parseCall validates function_call and custom_tool_call history items.
func parseCall(o object, param, typ string) (inputItem, *apiError) {
	payload := "arguments"
	allowed := []string{"type", "id", "call_id", "name", "arguments", "status", "namespace", "caller", "async"}
	if typ == "custom_tool_call" {
		payload = "input"
		allowed = []string{"type", "id", "call_id", "name", "input", "status", "namespace"}
	}
	if err := checkKeys(o, param, allowed...); err != nil {
		return inputItem{}, err
	}
	it := inputItem{Type: typ}
	var err *apiError
	if it.CallID, err = reqString(o, "call_id", param); err != nil {
		return inputItem{}, err
	}
	if it.Name, err = reqString(o, "name", param); err != nil {
		return inputItem{}, err
	}
	if _, err = textMember(o, payload, param); err != nil {
		return inputItem{}, err
	}
	if it.ID, _, err = optString(o, "id", param); err != nil {
		return inputItem{}, err
	}
	if _, err = optEnum(o, "status", param, "in_progress", "completed", "incomplete"); err != nil {
		return inputItem{}, err
	}
	return it, nil
}

// parseCallOutput validates function_call_output and custom_tool_call_output
// items; their call_id must name an earlier call of the matching kind.
func parseCallOutput(o object, param, typ string, calls map[string]string) (inputItem, *apiError) {
	callType, kind := "function_call", "function call output"
	allowed := []string{"type", "id", "call_id", "output", "status", "name", "namespace", "caller"}
	if typ == "custom_tool_call_output" {
		callType, kind = "custom_tool_call", "custom tool call output"
		allowed = []string{"type", "id", "call_id", "output", "status"}
	}
	if err := checkKeys(o, param, allowed...); err != nil {
		return inputItem{}, err
	}
	it := inputItem{Type: typ}
	var err *apiError
	if it.CallID, err = reqString(o, "call_id", param); err != nil {
		return inputItem{}, err
	}
	if it.ID, _, err = optString(o, "id", param); err != nil {
		return inputItem{}, err
	}
	ov, ok := o["output"]
	if !ok || ov == nil {
		return inputItem{}, errMissing(path(param, "output"))
	}
	switch out := ov.(type) {
	case string:
	case []any:
		for j, pv := range out {
			if _, _, err := parseContentPart(pv, index(path(param, "output"), j),
				[]string{"input_text", "input_image", "input_file"}); err != nil {
				return inputItem{}, err
			}
		}
	default:
		return inputItem{}, errType(path(param, "output"), "a string or an array", ov)
	}
	if calls[it.CallID] != callType {
		return inputItem{}, invalidRequest("input", "",
			fmt.Sprintf("No tool call found for %s with call_id %s.", kind, it.CallID))
	}
	return it, nil
}

// parseReasoning validates a reasoning item's shape; its ciphertext is
// verified later, against the request's API key.
func parseReasoning(o object, param string) (inputItem, *apiError) {
	if err := checkKeys(o, param, "type", "id", "summary", "encrypted_content", "content", "status"); err != nil {
		return inputItem{}, err
	}
	it := inputItem{Type: "reasoning"}
	var err *apiError
	if it.ID, _, err = optString(o, "id", param); err != nil {
		return inputItem{}, err
	}
	if it.Encrypted, _, err = optString(o, "encrypted_content", param); err != nil {
		return inputItem{}, err
	}
	if _, err = optEnum(o, "status", param, "in_progress", "completed", "incomplete"); err != nil {
		return inputItem{}, err
	}
	sv, ok := o["summary"]
	if !ok || sv == nil {
		return inputItem{}, errMissing(path(param, "summary"))
	}
	if err := checkTextParts(sv, path(param, "summary"), "summary_text"); err != nil {
		return inputItem{}, err
	}
	if cv, ok := o["content"]; ok && cv != nil {
		if err := checkTextParts(cv, path(param, "content"), "reasoning_text"); err != nil {
			return inputItem{}, err
		}
	}
	return it, nil
}

// checkTextParts validates an array of {"type":typ,"text":string}.
func checkTextParts(v any, param, typ string) *apiError {
	arr, ok := v.([]any)
	if !ok {
		return errType(param, "an array", v)
	}
	for j, e := range arr {
		pp := index(param, j)
		p, err := asObject(e, pp)
		if err != nil {
			return err
		}
		if err := checkKeys(p, pp, "type", "text"); err != nil {
			return err
		}
		if _, err := optEnum(p, "type", pp, typ); err != nil {
			return err
		}
		if _, ok := p["type"]; !ok {
			return errMissing(path(pp, "type"))
		}
		if _, err := textMember(p, "text", pp); err != nil {
			return err
		}
	}
	return nil
}

// parseItemReference validates {"type":"item_reference","id"}; the fake
// stores nothing, so every reference is later answered as not found.
func parseItemReference(o object, param string) (inputItem, *apiError) {
	if err := checkKeys(o, param, "type", "id"); err != nil {
		return inputItem{}, err
	}
	id, err := reqString(o, "id", param)
	if err != nil {
		return inputItem{}, err
	}
	return inputItem{Type: "item_reference", ID: id}, nil
}
