package translate

import (
	"encoding/json"
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// toolKeys are the members of a tool definition in either the nested Chat
// form or the flat Responses form.
var toolKeys = []string{"type", "function", "custom", "name"}

// toolDefKeys are the members of a function or custom tool definition.
var toolDefKeys = []string{"name", "description", "parameters", "strict", "format"}

// toolDef holds the members of a function or custom tool definition.
type toolDef struct {
	Name, Description, Parameters, Strict, Format json.RawMessage
}

func decodeToolDef(raw json.RawMessage) toolDef {
	var v [5]json.RawMessage
	pick(raw, toolDefKeys, v[:])
	return toolDef{Name: v[0], Description: v[1], Parameters: v[2], Strict: v[3], Format: v[4]}
}

// tools flattens Chat tool definitions and records the custom tool names.
func (t *chatTranslator) tools(raw json.RawMessage) (json.RawMessage, *apierr.Error) {
	list, ok := jsonscan.SplitArray(raw)
	if !ok {
		return nil, invalidType("tools", "an array")
	}
	b := make([]byte, 0, len(raw)+16*len(list))
	b = append(b, '[')
	for i, item := range list {
		param := fmt.Sprintf("tools[%d]", i)
		if !isObject(item) {
			return nil, invalidType(param, "an object")
		}
		var v [4]json.RawMessage
		pick(item, toolKeys, v[:])
		typ, function, custom, name := typeName(v[0]), v[1], v[2], v[3]
		if i > 0 {
			b = append(b, ',')
		}
		var aerr *apierr.Error
		switch {
		case typ == "function" && !isNull(function):
			b, aerr = appendFunctionTool(b, param+".function", function)
		case typ == "function" && !isNull(name):
			b, aerr = appendFunctionTool(b, param, item)
		case typ == "custom" && !isNull(custom):
			var n string
			b, n, aerr = appendCustomTool(b, param+".custom", custom)
			t.addCustom(n)
		case typ == "custom" && !isNull(name):
			// Flat Responses-style custom tool (Cursor Ask mode): as is.
			n, ok := unquote(name)
			if !ok {
				return nil, invalidType(param+".name", "a string")
			}
			t.addCustom(n)
			b = append(b, item...)
		default:
			return nil, invalidValue(param+".type",
				"Invalid tool: expected type 'function' or 'custom' with its definition.")
		}
		if aerr != nil {
			return nil, aerr
		}
	}
	return append(b, ']'), nil
}

func (t *chatTranslator) addCustom(name string) {
	if t.customTools == nil {
		t.customTools = make(map[string]bool)
	}
	t.customTools[name] = true
}

// appendFunctionTool appends a flat function tool with parameters and
// strict always present.
func appendFunctionTool(b []byte, param string, raw json.RawMessage) ([]byte, *apierr.Error) {
	if !isObject(raw) {
		return b, invalidType(param, "an object")
	}
	d := decodeToolDef(raw)
	if !isString(d.Name) {
		return b, missing(param + ".name")
	}
	b = append(b, `{"type":"function","name":`...)
	b = append(b, d.Name...)
	if !isNull(d.Description) {
		b = append(b, `,"description":`...)
		b = append(b, d.Description...)
	}
	b = append(b, `,"parameters":`...)
	if isNull(d.Parameters) {
		b = append(b, "null"...)
	} else if isObject(d.Parameters) {
		b = append(b, d.Parameters...)
	} else {
		return b, invalidType(param+".parameters", "an object")
	}
	b = append(b, `,"strict":`...)
	if isNull(d.Strict) {
		b = append(b, "null"...)
	} else if isBool(d.Strict) {
		b = append(b, d.Strict...)
	} else {
		return b, invalidType(param+".strict", "a boolean")
	}
	return append(b, '}'), nil
}

// appendCustomTool appends a flat custom tool, un-nesting a grammar format.
func appendCustomTool(b []byte, param string, raw json.RawMessage) ([]byte, string, *apierr.Error) {
	if !isObject(raw) {
		return b, "", invalidType(param, "an object")
	}
	d := decodeToolDef(raw)
	name, ok := unquote(d.Name)
	if !ok {
		return b, "", missing(param + ".name")
	}
	b = append(b, `{"type":"custom","name":`...)
	b = append(b, d.Name...)
	if !isNull(d.Description) {
		b = append(b, `,"description":`...)
		b = append(b, d.Description...)
	}
	if !isNull(d.Format) {
		var f struct {
			Type    string `json:"type"`
			Grammar *struct {
				Definition json.RawMessage `json:"definition"`
				Syntax     json.RawMessage `json:"syntax"`
			} `json:"grammar"`
		}
		if !isObject(d.Format) || json.Unmarshal(d.Format, &f) != nil {
			return b, "", invalidType(param+".format", "an object")
		}
		b = append(b, `,"format":`...)
		if f.Type == "grammar" && f.Grammar != nil {
			if !isString(f.Grammar.Definition) || !isString(f.Grammar.Syntax) {
				return b, "", missing(param + ".format.grammar.definition")
			}
			b = append(b, `{"type":"grammar","definition":`...)
			b = append(b, f.Grammar.Definition...)
			b = append(b, `,"syntax":`...)
			b = append(b, f.Grammar.Syntax...)
			b = append(b, '}')
		} else {
			b = append(b, d.Format...)
		}
	}
	return append(b, '}'), name, nil
}

// choiceDef is a tool_choice object or an allowed_tools entry.
type choiceDef struct {
	Type     string          `json:"type"`
	Name     json.RawMessage `json:"name"`
	Function *struct {
		Name json.RawMessage `json:"name"`
	} `json:"function"`
	Custom *struct {
		Name json.RawMessage `json:"name"`
	} `json:"custom"`
	AllowedTools *struct {
		Mode  json.RawMessage   `json:"mode"`
		Tools []json.RawMessage `json:"tools"`
	} `json:"allowed_tools"`
}

// toolChoice converts a Chat tool_choice (or an allowed_tools entry) to
// the flat Responses form.
func toolChoice(param string, raw json.RawMessage) (json.RawMessage, *apierr.Error) {
	if isString(raw) {
		return raw, nil
	}
	var c choiceDef
	if !isObject(raw) || json.Unmarshal(raw, &c) != nil {
		return nil, invalidType(param, "a string or an object")
	}
	flatName := func(kind string, name json.RawMessage) (json.RawMessage, *apierr.Error) {
		if !isString(name) {
			return nil, missing(param + "." + kind + ".name")
		}
		b := append([]byte(`{"type":`), appendString(nil, kind)...)
		b = append(b, `,"name":`...)
		b = append(b, name...)
		return append(b, '}'), nil
	}
	switch {
	case c.Type == "function" && c.Function != nil:
		return flatName("function", c.Function.Name)
	case c.Type == "custom" && c.Custom != nil:
		return flatName("custom", c.Custom.Name)
	case c.Type == "allowed_tools" && c.AllowedTools != nil:
		b := []byte(`{"type":"allowed_tools"`)
		if !isNull(c.AllowedTools.Mode) {
			b = append(b, `,"mode":`...)
			b = append(b, c.AllowedTools.Mode...)
		}
		b = append(b, `,"tools":[`...)
		for i, tr := range c.AllowedTools.Tools {
			entry, aerr := toolChoice(fmt.Sprintf("%s.allowed_tools.tools[%d]", param, i), tr)
			if aerr != nil {
				return nil, aerr
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, entry...)
		}
		return append(b, ']', '}'), nil
	}
	return raw, nil
}

// responseFormat converts a Chat response_format to a Responses text.format.
func responseFormat(raw json.RawMessage) (json.RawMessage, *apierr.Error) {
	var rf struct {
		Type       string          `json:"type"`
		JSONSchema json.RawMessage `json:"json_schema"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &rf) != nil {
		return nil, invalidType("response_format", "an object")
	}
	switch rf.Type {
	case "text", "json_object":
		return append(appendString([]byte(`{"type":`), rf.Type), '}'), nil
	case "json_schema":
	default:
		return nil, invalidValue("response_format.type",
			"Invalid value for 'response_format.type': expected 'text', 'json_object' or 'json_schema'.")
	}
	var js struct {
		Name        json.RawMessage `json:"name"`
		Description json.RawMessage `json:"description"`
		Schema      json.RawMessage `json:"schema"`
		Strict      json.RawMessage `json:"strict"`
	}
	if !isObject(rf.JSONSchema) || json.Unmarshal(rf.JSONSchema, &js) != nil {
		return nil, missing("response_format.json_schema")
	}
	if !isString(js.Name) {
		return nil, missing("response_format.json_schema.name")
	}
	var w objectWriter
	w.str("type", "json_schema")
	w.raw("name", js.Name)
	if !isNull(js.Description) {
		w.raw("description", js.Description)
	}
	if !isNull(js.Schema) {
		w.raw("schema", js.Schema)
	}
	if !isNull(js.Strict) {
		w.raw("strict", js.Strict)
	}
	return w.bytes(), nil
}
