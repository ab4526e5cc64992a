package translate

// This file is the request translation as it was before the single-pass
// validator, the item buffer and the shared member decoder: the reference
// the property tests and FuzzTranslateReference hold Translate to. It is
// test-only and must not change with Translate.

import (
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// refCheckJSON is CheckJSON as it was: json.Valid, then utf8.Valid.
func refCheckJSON(body []byte) *apierr.Error {
	if len(body) >= 3 && string(body[:3]) == string(utf8BOM) {
		return apierr.InvalidRequest("", "", "We could not parse the JSON body of your request: "+
			"it starts with a UTF-8 byte order mark (byte offset 0); send the JSON without it.")
	}
	if !json.Valid(body) {
		var v any
		return bodyError(json.Unmarshal(body, &v))
	}
	if !utf8.Valid(body) {
		return apierr.InvalidRequest("", "", fmt.Sprintf(
			"We could not parse the JSON body of your request: it is not valid UTF-8 (first invalid byte at offset %d).", invalidUTF8At(body)))
	}
	return nil
}

// refChatTranslator holds the state of one Chat body translation.
type refChatTranslator struct {
	req         *Request
	customTools map[string]bool // names of custom tools in this request
	customCalls map[string]bool // call ids of custom tool calls seen in history
}

// refTranslateChat translates a classic Chat Completions body field by field.
func refTranslateChat(req *Request, top map[string]json.RawMessage, fs fieldSet, alias Alias, cfg *Config) *apierr.Error {
	t := &refChatTranslator{req: req}
	var p policy
	var format json.RawMessage
	var verbosity json.RawMessage
	var maxCompletion, maxTokens json.RawMessage
	var obfuscation json.RawMessage
	for _, k := range sortedKeys(top) {
		v := top[k]
		if isNull(v) && k != "model" && k != "messages" {
			// An optional field sent as null means "not set".
			if !refChatFields[k] {
				return unknownParam(k)
			}
			continue
		}
		switch k {
		case "model", "messages":
			// handled below
		case "stream":
			if !isBool(v) {
				return invalidType(k, "a boolean")
			}
			req.Stream = string(v) == "true"
			fs[k] = v
		case "stream_options":
			so, aerr := parseStreamOptions(v)
			if aerr != nil {
				return aerr
			}
			req.IncludeUsage = so.includeUsage
			obfuscation = so.obfuscation
		case "tools":
			tools, aerr := t.tools(v)
			if aerr != nil {
				return aerr
			}
			fs[k] = tools
		case "tool_choice":
			tc, aerr := toolChoice(k, v)
			if aerr != nil {
				return aerr
			}
			fs[k] = tc
		case "parallel_tool_calls", "temperature", "top_p", "user", "safety_identifier",
			"prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "moderation",
			"metadata", "service_tier":
			fs[k] = v
		case "response_format":
			f, aerr := responseFormat(v)
			if aerr != nil {
				return aerr
			}
			format = f
		case "verbosity":
			if !isString(v) {
				return invalidType(k, "a string")
			}
			verbosity = v
		case "reasoning_effort":
			s, ok := unquote(v)
			if !ok {
				return invalidType(k, "a string")
			}
			p.effort = s
		case "max_completion_tokens":
			if !isNumber(v) {
				return invalidType(k, "an integer")
			}
			maxCompletion = v
		case "max_tokens":
			if !isNumber(v) {
				return invalidType(k, "an integer")
			}
			maxTokens = v
		case "store":
			if !isBool(v) {
				return invalidType(k, "a boolean")
			}
			p.store = v
		case "n":
			var n float64
			if err := json.Unmarshal(v, &n); err != nil {
				return invalidType(k, "an integer")
			}
			if n != 1 {
				return unsupportedValue(k, "Unsupported value: 'n' must be 1; this model returns a single choice.")
			}
		case "logprobs":
			if !isBool(v) {
				return invalidType(k, "a boolean")
			}
			if string(v) == "true" {
				return unsupportedValue(k, "Unsupported value: 'logprobs' is not supported with this model.")
			}
		case "modalities":
			var mods []string
			if err := json.Unmarshal(v, &mods); err != nil {
				return invalidType(k, "an array of strings")
			}
			for _, m := range mods {
				if m == "audio" {
					return unsupportedValue(k, "Unsupported value: 'modalities' does not support 'audio' with this model.")
				}
			}
		case "stop", "top_logprobs", "audio", "web_search_options", "functions", "function_call":
			return unsupportedParam(k, "is not supported with this model")
		case "seed", "logit_bias", "frequency_penalty", "presence_penalty", "prediction":
			// No Responses equivalent; dropped.
		default:
			return unknownParam(k)
		}
	}
	if obfuscation != nil && req.Stream {
		// Upstream accepts stream_options only on streaming requests.
		var w objectWriter
		w.raw("include_obfuscation", obfuscation)
		fs["stream_options"] = w.bytes()
	}
	switch {
	case maxCompletion != nil:
		fs["max_output_tokens"] = maxCompletion
	case maxTokens != nil:
		fs["max_output_tokens"] = maxTokens
	}
	if p.effort != "" {
		var w objectWriter
		w.str("effort", p.effort)
		p.reasoning = w.bytes()
	}
	if format != nil || verbosity != nil {
		var w objectWriter
		if format != nil {
			w.raw("format", format)
		}
		if verbosity != nil {
			w.raw("verbosity", verbosity)
			p.verbosity = true
		}
		p.text = w.bytes()
	}
	if aerr := t.messages(top["messages"]); aerr != nil {
		return aerr
	}
	return applyPolicy(req, alias, cfg, p, fs)
}

// refChatFields are the top-level Chat fields this translator knows.
var refChatFields = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "temperature": true, "top_p": true,
	"user": true, "safety_identifier": true, "prompt_cache_key": true,
	"prompt_cache_retention": true, "prompt_cache_options": true, "moderation": true,
	"metadata": true, "service_tier": true, "response_format": true, "verbosity": true,
	"reasoning_effort": true, "max_completion_tokens": true, "max_tokens": true, "store": true,
	"n": true, "logprobs": true, "modalities": true, "stop": true, "top_logprobs": true,
	"audio": true, "web_search_options": true, "functions": true, "function_call": true,
	"seed": true, "logit_bias": true, "frequency_penalty": true, "presence_penalty": true,
	"prediction": true,
}

// refChatMessage is one Chat message; unknown members (name, audio, ...) are ignored.
type refChatMessage struct {
	Role       json.RawMessage
	Content    json.RawMessage
	Refusal    json.RawMessage
	ToolCalls  json.RawMessage
	ToolCallID json.RawMessage
	// FunctionCall is the deprecated single call of an assistant message.
	FunctionCall json.RawMessage
	// Unknown is the first member that is not a Chat message field.
	Unknown string
	// Members counts the message's members.
	Members int
}

// refEasyInputMin is the size from which a plain text message is forwarded
// as the client sent it instead of being rewritten as a typed item.
const refEasyInputMin = 64 << 10

func (t *refChatTranslator) messages(raw json.RawMessage) *apierr.Error {
	if isNull(raw) {
		return missing("messages")
	}
	msgs, ok := jsonscan.SplitArray(raw)
	if !ok {
		return invalidType("messages", "an array")
	}
	if len(msgs) == 0 {
		return invalidValue("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	req := t.req
	req.History = make([]Message, 0, len(msgs))
	req.Input = make([]json.RawMessage, 0, len(msgs)+len(msgs)/2)
	for i, m := range msgs {
		l := refLoc{i: i, j: -1}
		if !isObject(m) {
			return invalidType(l.String(), "an object")
		}
		cm := refDecodeMessage(m)
		if cm.Unknown != "" {
			return unknownParam(l.at("." + cm.Unknown))
		}
		role, ok := unquote(cm.Role)
		if !ok {
			if isNull(cm.Role) {
				return missing(l.at(".role"))
			}
			return invalidType(l.at(".role"), "a string")
		}
		from := len(req.Input)
		var aerr *apierr.Error
		switch role {
		case "system", "developer", "user":
			if cm.Members == 2 && isString(cm.Content) && len(cm.Content) >= refEasyInputMin {
				// {"role":…,"content":"…"} is already a Responses input
				// message (EasyInputMessage): a large one is sent as the
				// client's own bytes rather than copied
				req.Input = append(req.Input, m)
				break
			}
			aerr = t.inputMessage(l, role, cm.Content)
		case "assistant":
			aerr = t.assistant(l, &cm)
		case "tool":
			aerr = t.toolResult(l, &cm)
		case "function":
			aerr = unsupportedValue(l.at(".role"),
				"Unsupported value: role 'function' is deprecated and not supported; use tool messages.")
		default:
			aerr = invalidValue(l.at(".role"), fmt.Sprintf("Invalid value for '%s.role': unknown role.", l.String()))
		}
		if aerr != nil {
			return aerr
		}
		req.History = append(req.History, Message{Raw: m, Role: role, Items: [2]int{from, len(req.Input)}})
	}
	return nil
}

// refLoc is the location of a message, content part or tool call in the
// request, formatted only when an error names it: "messages[i]" plus, when
// j >= 0, sub and "[j]" (e.g. "messages[3].content[1]").
type refLoc struct {
	i   int
	sub string
	j   int
}

// String formats l.
func (l refLoc) String() string {
	s := "messages[" + strconv.Itoa(l.i) + "]"
	if l.j >= 0 {
		s += l.sub + "[" + strconv.Itoa(l.j) + "]"
	}
	return s
}

// at formats l followed by suffix.
func (l refLoc) at(suffix string) string { return l.String() + suffix }

// refChatPart is one content part of a Chat message.
type refChatPart struct {
	Type     string
	Text     json.RawMessage
	Refusal  json.RawMessage
	ImageURL json.RawMessage
	File     json.RawMessage
	Unknown  string // the first member that is not a Chat content part field
}

func refParseParts(l refLoc, content json.RawMessage) ([]json.RawMessage, *apierr.Error) {
	parts, ok := jsonscan.SplitArray(content)
	if !ok {
		return nil, invalidType(l.at(".content"), "a string or an array of content parts")
	}
	return parts, nil
}

func refDecodeMessage(raw json.RawMessage) refChatMessage {
	var cm refChatMessage
	members(raw, func(k []byte, v json.RawMessage) {
		cm.Members++
		switch string(k) {
		case "role":
			cm.Role = v
		case "content":
			cm.Content = v
		case "refusal":
			cm.Refusal = v
		case "tool_calls":
			cm.ToolCalls = v
		case "tool_call_id":
			cm.ToolCallID = v
		case "function_call":
			cm.FunctionCall = v
		case "name", "audio", "annotations":
			// documented message fields the Responses API has no place
			// for; accepted and not forwarded
		default:
			if cm.Unknown == "" {
				cm.Unknown = string(k)
			}
		}
	})
	return cm
}

func refDecodePart(l refLoc, raw json.RawMessage) (refChatPart, *apierr.Error) {
	var p refChatPart
	if !isObject(raw) {
		return p, invalidType(l.String(), "a content part object")
	}
	members(raw, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "type":
			p.Type = typeName(v)
		case "text":
			p.Text = v
		case "refusal":
			p.Refusal = v
		case "image_url":
			p.ImageURL = v
		case "file":
			p.File = v
		case "input_audio":
		default:
			if p.Unknown == "" {
				p.Unknown = string(k)
			}
		}
	})
	// Responses-style parts are forwarded as they are: the upstream
	// checks their members
	if p.Unknown != "" && p.Type != "input_text" && p.Type != "input_image" && p.Type != "input_file" {
		return p, unknownParam(l.at("." + p.Unknown))
	}
	return p, nil
}

// inputMessage translates a system, developer or user message.
func (t *refChatTranslator) inputMessage(l refLoc, role string, content json.RawMessage) *apierr.Error {
	if isNull(content) {
		return missing(l.at(".content"))
	}
	b := make([]byte, 0, len(content)+64)
	b = append(b, `{"type":"message","role":`...)
	b = appendString(b, role)
	b = append(b, `,"content":`...)
	if isString(content) {
		b = append(b, content...)
		t.req.Input = append(t.req.Input, append(b, '}'))
		return nil
	}
	parts, aerr := refParseParts(l, content)
	if aerr != nil {
		return aerr
	}
	b = append(b, '[')
	for j, raw := range parts {
		pl := refLoc{i: l.i, sub: ".content", j: j}
		p, aerr := refDecodePart(pl, raw)
		if aerr != nil {
			return aerr
		}
		if j > 0 {
			b = append(b, ',')
		}
		switch {
		case p.Type == "text":
			if !isString(p.Text) {
				return invalidType(pl.at(".text"), "a string")
			}
			b = append(b, `{"type":"input_text","text":`...)
			b = append(b, p.Text...)
			b = append(b, '}')
		case p.Type == "image_url" && role == "user":
			b, aerr = refAppendImage(b, pl, p.ImageURL)
		case p.Type == "file" && role == "user":
			b, aerr = refAppendFile(b, pl, p.File)
		case p.Type == "input_audio" && role == "user":
			return unsupportedValue(pl.String(), "Unsupported content part: 'input_audio' is not supported by this model.")
		case (p.Type == "input_text" || p.Type == "input_image" || p.Type == "input_file") && role == "user":
			// Responses-style part inside a Chat body: already in upstream form.
			b = append(b, raw...)
		default:
			return invalidValue(pl.at(".type"), fmt.Sprintf("Invalid content part type for a %s message.", role))
		}
		if aerr != nil {
			return aerr
		}
	}
	b = append(b, ']', '}')
	t.req.Input = append(t.req.Input, b)
	return nil
}

func refAppendImage(b []byte, l refLoc, raw json.RawMessage) ([]byte, *apierr.Error) {
	var url, detail json.RawMessage
	switch {
	case isString(raw):
		url = raw
	case isObject(raw):
		members(raw, func(k []byte, v json.RawMessage) {
			switch string(k) {
			case "url":
				url = v
			case "detail":
				detail = v
			}
		})
	default:
		return b, missing(l.at(".image_url"))
	}
	if !isString(url) {
		return b, missing(l.at(".image_url.url"))
	}
	if isNull(detail) {
		detail = json.RawMessage(`"auto"`)
	} else if !isString(detail) {
		return b, invalidType(l.at(".image_url.detail"), "a string")
	}
	b = append(b, `{"type":"input_image","image_url":`...)
	b = append(b, url...)
	b = append(b, `,"detail":`...)
	b = append(b, detail...)
	return append(b, '}'), nil
}

func refAppendFile(b []byte, l refLoc, raw json.RawMessage) ([]byte, *apierr.Error) {
	if !isObject(raw) {
		return b, invalidType(l.at(".file"), "an object")
	}
	var f struct{ FileData, FileID, Filename json.RawMessage }
	members(raw, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "file_data":
			f.FileData = v
		case "file_id":
			f.FileID = v
		case "filename":
			f.Filename = v
		}
	})
	b = append(b, `{"type":"input_file"`...)
	for _, kv := range [...]struct {
		k string
		v json.RawMessage
	}{{"file_data", f.FileData}, {"file_id", f.FileID}, {"filename", f.Filename}} {
		if isNull(kv.v) {
			continue
		}
		if !isString(kv.v) {
			return b, invalidType(l.at(".file."+kv.k), "a string")
		}
		b = append(b, ',')
		b = appendString(b, kv.k)
		b = append(b, ':')
		b = append(b, kv.v...)
	}
	return append(b, '}'), nil
}

// assistant translates an assistant message into an optional message item
// followed by its tool calls.
func (t *refChatTranslator) assistant(l refLoc, cm *refChatMessage) *apierr.Error {
	if !isNull(cm.FunctionCall) {
		return unsupportedParam(l.at(".function_call"), "is deprecated and not supported; use tool_calls")
	}
	var parts []byte // comma-separated output content parts
	addPart := func(kind string, val json.RawMessage) {
		if len(parts) > 0 {
			parts = append(parts, ',')
		}
		if kind == "refusal" {
			parts = append(parts, `{"type":"refusal","refusal":`...)
			parts = append(parts, val...)
			parts = append(parts, '}')
			return
		}
		parts = append(parts, `{"type":"output_text","text":`...)
		parts = append(parts, val...)
		parts = append(parts, `,"annotations":[]}`...)
	}
	switch {
	case isNull(cm.Content):
	case isString(cm.Content):
		if string(cm.Content) != `""` {
			addPart("text", cm.Content)
		}
	default:
		list, aerr := refParseParts(l, cm.Content)
		if aerr != nil {
			return aerr
		}
		for j, raw := range list {
			pl := refLoc{i: l.i, sub: ".content", j: j}
			p, aerr := refDecodePart(pl, raw)
			if aerr != nil {
				return aerr
			}
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
		}
	}
	// an empty refusal is no refusal: SDK accumulators echo "refusal":""
	if !isNull(cm.Refusal) && string(cm.Refusal) != `""` {
		if !isString(cm.Refusal) {
			return invalidType(l.at(".refusal"), "a string")
		}
		addPart("refusal", cm.Refusal)
	}
	var calls []json.RawMessage
	if !isNull(cm.ToolCalls) {
		var ok bool
		if calls, ok = jsonscan.SplitArray(cm.ToolCalls); !ok {
			return invalidType(l.at(".tool_calls"), "an array")
		}
	}
	if len(parts) > 0 || len(calls) == 0 {
		if len(parts) == 0 {
			addPart("text", json.RawMessage(`""`))
		}
		b := make([]byte, 0, len(parts)+64)
		b = append(b, `{"type":"message","role":"assistant","content":[`...)
		b = append(b, parts...)
		b = append(b, ']', '}')
		t.req.Input = append(t.req.Input, b)
	}
	for k, raw := range calls {
		item, aerr := t.toolCall(refLoc{i: l.i, sub: ".tool_calls", j: k}, raw)
		if aerr != nil {
			return aerr
		}
		t.req.Input = append(t.req.Input, item)
	}
	return nil
}

// refChatToolCall is one assistant tool call in Chat form.
type refChatToolCall struct {
	ID       json.RawMessage
	Type     string
	Function *refCallBody // {name, arguments}
	Custom   *refCallBody // {name, input}
}

// refCallBody is the function or custom object of a tool call.
type refCallBody struct {
	Name      json.RawMessage
	Arguments json.RawMessage
	Input     json.RawMessage
}

func refDecodeCallBody(raw json.RawMessage) *refCallBody {
	if !isObject(raw) {
		return nil
	}
	var c refCallBody
	members(raw, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "name":
			c.Name = v
		case "arguments":
			c.Arguments = v
		case "input":
			c.Input = v
		}
	})
	return &c
}

func (t *refChatTranslator) toolCall(l refLoc, raw json.RawMessage) (json.RawMessage, *apierr.Error) {
	if !isObject(raw) {
		return nil, invalidType(l.String(), "a tool call object")
	}
	var tc refChatToolCall
	members(raw, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "id":
			tc.ID = v
		case "type":
			tc.Type = typeName(v)
		case "function":
			tc.Function = refDecodeCallBody(v)
		case "custom":
			tc.Custom = refDecodeCallBody(v)
		}
	})
	id, ok := unquote(tc.ID)
	if !ok || id == "" {
		return nil, missing(l.at(".id"))
	}
	var name, payload json.RawMessage
	var payloadParam string
	custom := false
	switch {
	case (tc.Type == "function" || tc.Type == "") && tc.Function != nil:
		name, payload, payloadParam = tc.Function.Name, tc.Function.Arguments, ".function.arguments"
		if n, ok := unquote(name); ok && t.customTools[n] {
			// A custom call we returned to Cursor as a function call.
			custom = true
		}
		if !isString(name) {
			return nil, missing(l.at(".function.name"))
		}
		if n, _ := unquote(name); n == "" {
			return nil, emptyName(l.at(".function.name"))
		}
	case tc.Type == "custom" && tc.Custom != nil:
		name, payload, payloadParam = tc.Custom.Name, tc.Custom.Input, ".custom.input"
		custom = true
		if !isString(name) {
			return nil, missing(l.at(".custom.name"))
		}
		if n, _ := unquote(name); n == "" {
			return nil, emptyName(l.at(".custom.name"))
		}
	default:
		return nil, invalidValue(l.at(".type"), "Invalid tool call: expected type 'function' or 'custom' with its object.")
	}
	if isNull(payload) {
		payload = json.RawMessage(`""`)
	} else if !isString(payload) {
		return nil, invalidType(l.at(payloadParam), "a string")
	}
	b := make([]byte, 0, len(payload)+len(name)+len(tc.ID)+64)
	if custom {
		if t.customCalls == nil {
			t.customCalls = make(map[string]bool)
		}
		t.customCalls[id] = true
		b = append(b, `{"type":"custom_tool_call","call_id":`...)
	} else {
		b = append(b, `{"type":"function_call","call_id":`...)
	}
	b = append(b, tc.ID...)
	b = append(b, `,"name":`...)
	b = append(b, name...)
	if custom {
		b = append(b, `,"input":`...)
	} else {
		b = append(b, `,"arguments":`...)
	}
	b = append(b, payload...)
	return append(b, '}'), nil
}

// toolResult translates a tool message into a function_call_output or
// custom_tool_call_output item.
func (t *refChatTranslator) toolResult(l refLoc, cm *refChatMessage) *apierr.Error {
	id, ok := unquote(cm.ToolCallID)
	if !ok || id == "" {
		return missing(l.at(".tool_call_id"))
	}
	var output json.RawMessage
	switch {
	case isNull(cm.Content):
		output = json.RawMessage(`""`)
	case isString(cm.Content):
		output = cm.Content
	default:
		list, aerr := refParseParts(l, cm.Content)
		if aerr != nil {
			return aerr
		}
		var joined []byte
		for j, raw := range list {
			pl := refLoc{i: l.i, sub: ".content", j: j}
			p, aerr := refDecodePart(pl, raw)
			if aerr != nil {
				return aerr
			}
			if p.Type != "text" && p.Type != "input_text" {
				return invalidValue(pl.at(".type"), "Invalid content part type for a tool message: only text parts are supported.")
			}
			s, ok := unquote(p.Text)
			if !ok {
				return invalidType(pl.at(".text"), "a string")
			}
			joined = append(joined, s...)
		}
		output = appendString(nil, string(joined))
	}
	b := make([]byte, 0, len(output)+len(cm.ToolCallID)+64)
	if t.customCalls[id] {
		b = append(b, `{"type":"custom_tool_call_output","call_id":`...)
	} else {
		b = append(b, `{"type":"function_call_output","call_id":`...)
	}
	b = append(b, cm.ToolCallID...)
	b = append(b, `,"output":`...)
	b = append(b, output...)
	t.req.Input = append(t.req.Input, append(b, '}'))
	return nil
}

// refChatTool is a tool definition in either the nested Chat form or the flat
// Responses form.
type refChatTool struct {
	Type     string
	Function json.RawMessage
	Custom   json.RawMessage
	Name     json.RawMessage
}

// tools flattens Chat tool definitions and records the custom tool names.
func (t *refChatTranslator) tools(raw json.RawMessage) (json.RawMessage, *apierr.Error) {
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
		var ct refChatTool
		members(item, func(k []byte, v json.RawMessage) {
			switch string(k) {
			case "type":
				ct.Type = typeName(v)
			case "function":
				ct.Function = v
			case "custom":
				ct.Custom = v
			case "name":
				ct.Name = v
			}
		})
		if i > 0 {
			b = append(b, ',')
		}
		var aerr *apierr.Error
		switch {
		case ct.Type == "function" && !isNull(ct.Function):
			b, aerr = appendFunctionTool(b, param+".function", ct.Function)
		case ct.Type == "function" && !isNull(ct.Name):
			b, aerr = appendFunctionTool(b, param, item)
		case ct.Type == "custom" && !isNull(ct.Custom):
			var name string
			b, name, aerr = appendCustomTool(b, param+".custom", ct.Custom)
			t.addCustom(name)
		case ct.Type == "custom" && !isNull(ct.Name):
			// Flat Responses-style custom tool (Cursor Ask mode): as is.
			name, ok := unquote(ct.Name)
			if !ok {
				return nil, invalidType(param+".name", "a string")
			}
			t.addCustom(name)
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

// refTranslateResponses forwards a Responses-shaped body: the same alias,
// reasoning defaults and store/include rules as a Chat body; stream_options
// is consumed; every other field passes through untouched.
func refTranslateResponses(req *Request, top map[string]json.RawMessage, fs fieldSet, alias Alias, cfg *Config) *apierr.Error {
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
		case "stream":
			if !isBool(v) {
				return invalidType(k, "a boolean")
			}
			req.Stream = string(v) == "true"
			fs[k] = v
		case "stream_options":
			so, aerr := parseStreamOptions(v)
			if aerr != nil {
				return aerr
			}
			req.IncludeUsage = so.includeUsage
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
	if aerr := refResponsesInput(req, top["input"]); aerr != nil {
		return aerr
	}
	return applyPolicy(req, alias, cfg, p, fs)
}

// refInputItem holds the members of an input item that classify it.
type refInputItem struct {
	Type string
	Role string
}

func refResponsesInput(req *Request, raw json.RawMessage) *apierr.Error {
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
		var ii refInputItem
		members(it, func(k []byte, v json.RawMessage) {
			switch string(k) {
			case "type":
				ii.Type = typeName(v)
			case "role":
				ii.Role = typeName(v)
			}
		})
		req.History[i] = Message{Raw: it, Role: itemRole(inputItem(ii)), Items: [2]int{i, i + 1}}
	}
	return nil
}

// refTranslate parses a client body posted to /chat/completions (either shape)
// and translates it. A body with "input" and no "messages" is
// Responses-shaped; anything else is treated as a Chat body. Errors are
// *apierr.Error 400 invalid_request_error naming the offending param, or
// code "unknown_parameter" for unknown fields of a Chat body.
//
// The body is validated once and then split without copying: Input items
// and History.Raw may share memory with body, which the caller must not
// modify afterwards.
func refTranslate(body []byte, cfg *Config) (*Request, *apierr.Error) {
	if aerr := refCheckJSON(body); aerr != nil {
		return nil, aerr
	}
	if !isObject(body[jsonscan.SkipSpace(body, 0):]) {
		return nil, apierr.InvalidRequest("", "", "The request body must be a JSON object.")
	}
	top := make(map[string]json.RawMessage, 16)
	members(body, func(k []byte, v json.RawMessage) { top[string(k)] = v })
	hasMessages := !isNull(top["messages"])
	_, hasInput := top["input"]
	model, aerr := parseModel(top["model"])
	if aerr != nil {
		return nil, aerr
	}
	alias := cfg.ResolveModel(model)
	req := &Request{
		ClientModel: model,
		Model:       alias.Model,
		Eligible:    !alias.NoReasoning,
	}
	fs := fieldSet{"model": appendString(nil, alias.Model)}
	if hasInput && !hasMessages {
		delete(top, "messages") // null
		req.Shape = ShapeResponses
		aerr = refTranslateResponses(req, top, fs, alias, cfg)
	} else {
		req.Shape = ShapeChat
		aerr = refTranslateChat(req, top, fs, alias, cfg)
	}
	if aerr != nil {
		return nil, aerr
	}
	req.Fields = fs.ordered()
	return req, nil
}

func (t *refChatTranslator) addCustom(name string) {
	if t.customTools == nil {
		t.customTools = make(map[string]bool)
	}
	t.customTools[name] = true
}
