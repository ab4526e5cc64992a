package fakeupstream

import (
	"fmt"
	"slices"
)

// toolDef is one validated tool of the request.
type toolDef struct {
	Type     string   // "function" or "custom"
	Name     string   // tool name
	Required []string // function tools: required properties of type string, in declaration order of "required"
}

// parseTools validates tools[]: flat function tools with parameters and
// strict present, and flat custom tools with an optional format.
func parseTools(top object) ([]toolDef, *apiError) {
	v, ok := top["tools"]
	if !ok || v == nil {
		return nil, nil
	}
	arr, ok := v.([]any)
	if !ok {
		return nil, errType("tools", "an array", v)
	}
	tools := make([]toolDef, 0, len(arr))
	seen := map[string]bool{}
	for i, e := range arr {
		param := index("tools", i)
		t, err := asObject(e, param)
		if err != nil {
			return nil, err
		}
		typ, err := reqString(t, "type", param)
		if err != nil {
			return nil, err
		}
		var td toolDef
		switch typ {
		case "function":
			td, err = parseFunctionTool(t, param)
		case "custom":
			td, err = parseCustomTool(t, param)
		default:
			err = errValue(path(param, "type"), typ, []string{"function", "custom"})
		}
		if err != nil {
			return nil, err
		}
		if seen[td.Name] {
			return nil, invalidRequest("tools", "duplicate_tool_name",
				fmt.Sprintf("Duplicate tool name '%s' in 'tools'.", td.Name))
		}
		seen[td.Name] = true
		tools = append(tools, td)
	}
	return tools, nil
}

// parseFunctionTool validates {"type":"function","name","parameters","strict",...}.
// A Chat-style nested "function" object fails on the missing flat name.
func parseFunctionTool(t object, param string) (toolDef, *apiError) {
	name, err := reqString(t, "name", param)
	if err != nil {
		return toolDef{}, err
	}
	if err := checkKeys(t, param, "type", "name", "description", "parameters", "strict",
		"defer_loading", "allowed_callers", "async", "output_schema"); err != nil {
		return toolDef{}, err
	}
	if _, _, err := optString(t, "description", param); err != nil {
		return toolDef{}, err
	}
	pv, ok := t["parameters"]
	if !ok {
		return toolDef{}, errMissing(path(param, "parameters"))
	}
	var params object
	if pv != nil {
		if params, err = asObject(pv, path(param, "parameters")); err != nil {
			return toolDef{}, err
		}
	}
	if _, ok := t["strict"]; !ok {
		return toolDef{}, errMissing(path(param, "strict"))
	}
	if _, _, err := optBool(t, "strict", param); err != nil {
		return toolDef{}, err
	}
	return toolDef{Type: "function", Name: name, Required: requiredStrings(params)}, nil
}

// requiredStrings lists the required properties of a JSON schema whose type
// is (or includes) "string".
func requiredStrings(schema object) []string {
	props, _ := schema["properties"].(object)
	req, _ := schema["required"].([]any)
	var out []string
	for _, r := range req {
		name, ok := r.(string)
		if !ok {
			continue
		}
		prop, _ := props[name].(object)
		switch pt := prop["type"].(type) {
		case string:
			if pt == "string" {
				out = append(out, name)
			}
		case []any:
			if slices.Contains(pt, any("string")) {
				out = append(out, name)
			}
		}
	}
	return out
}

// parseCustomTool validates {"type":"custom","name","description?","format?"}.
func parseCustomTool(t object, param string) (toolDef, *apiError) {
	name, err := reqString(t, "name", param)
	if err != nil {
		return toolDef{}, err
	}
	if err := checkKeys(t, param, "type", "name", "description", "format", "defer_loading"); err != nil {
		return toolDef{}, err
	}
	if _, _, err := optString(t, "description", param); err != nil {
		return toolDef{}, err
	}
	fv, ok := t["format"]
	if !ok || fv == nil {
		return toolDef{Type: "custom", Name: name}, nil
	}
	fp := path(param, "format")
	f, err := asObject(fv, fp)
	if err != nil {
		return toolDef{}, err
	}
	typ, err := reqString(f, "type", fp)
	if err != nil {
		return toolDef{}, err
	}
	switch typ {
	case "text":
		err = checkKeys(f, fp, "type")
	case "grammar":
		if _, err = reqString(f, "definition", fp); err != nil {
			return toolDef{}, err
		}
		if err = checkKeys(f, fp, "type", "definition", "syntax"); err != nil {
			return toolDef{}, err
		}
		if _, ok := f["syntax"]; !ok {
			return toolDef{}, errMissing(path(fp, "syntax"))
		}
		_, err = optEnum(f, "syntax", fp, "lark", "regex")
	default:
		err = errValue(path(fp, "type"), typ, []string{"text", "grammar"})
	}
	if err != nil {
		return toolDef{}, err
	}
	return toolDef{Type: "custom", Name: name}, nil
}

// checkToolChoice validates the string and flat object forms of tool_choice
// and that a named tool exists in tools.
func checkToolChoice(top object, tools []toolDef) *apiError {
	v, ok := top["tool_choice"]
	if !ok || v == nil {
		return nil
	}
	if s, ok := v.(string); ok {
		if !slices.Contains([]string{"none", "auto", "required"}, s) {
			return errValue("tool_choice", s, []string{"none", "auto", "required"})
		}
		return nil
	}
	tc, err := asObject(v, "tool_choice")
	if err != nil {
		return err
	}
	typ, err := reqString(tc, "type", "tool_choice")
	if err != nil {
		return err
	}
	switch typ {
	case "function", "custom":
		name, err := reqString(tc, "name", "tool_choice")
		if err != nil {
			return err
		}
		if err := checkKeys(tc, "tool_choice", "type", "name"); err != nil {
			return err
		}
		return findTool(tools, typ, name, "tool_choice")
	case "allowed_tools":
		if err := checkKeys(tc, "tool_choice", "type", "mode", "tools"); err != nil {
			return err
		}
		if _, ok := tc["mode"]; !ok {
			return errMissing("tool_choice.mode")
		}
		if _, err := optEnum(tc, "mode", "tool_choice", "auto", "required"); err != nil {
			return err
		}
		arr, ok := tc["tools"].([]any)
		if !ok {
			if tc["tools"] == nil {
				return errMissing("tool_choice.tools")
			}
			return errType("tool_choice.tools", "an array", tc["tools"])
		}
		for i, e := range arr {
			param := index("tool_choice.tools", i)
			o, err := asObject(e, param)
			if err != nil {
				return err
			}
			typ, err := reqString(o, "type", param)
			if err != nil {
				return err
			}
			name, err := reqString(o, "name", param)
			if err != nil {
				return err
			}
			if err := checkKeys(o, param, "type", "name"); err != nil {
				return err
			}
			if err := findTool(tools, typ, name, param); err != nil {
				return err
			}
		}
		return nil
	default:
		return errValue("tool_choice.type", typ, []string{"function", "custom", "allowed_tools"})
	}
}

// findTool reports a tool_choice naming a tool that tools does not define.
func findTool(tools []toolDef, typ, name, param string) *apiError {
	for _, t := range tools {
		if t.Type == typ && t.Name == name {
			return nil
		}
	}
	return invalidRequest(param, "invalid_value",
		fmt.Sprintf("Tool choice '%s' with name '%s' not found in 'tools' parameter.", typ, name))
}
