package translate

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/bufpool"
	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// chatTranslator holds the state of one Chat body translation. The input
// items it builds go back to back into one buffer, out, sized for the
// whole history, so that a history costs a few allocations whatever its
// number of messages. Request.Input slices out; should out have to grow,
// items already built keep the old buffer, whose bytes never change.
type chatTranslator struct {
	req         *Request
	customTools map[string]bool // names of custom tools in this request
	customCalls map[string]bool // call ids of custom tool calls seen in history
	out         []byte          // the built input items, back to back
	ids         []byte          // the custom call ids, back to back (see keep)
	scratch     []byte          // reused for joined tool output text
}

// begin starts an item in out and returns its start.
func (t *chatTranslator) begin() int { return len(t.out) }

// end ends the item started at from.
func (t *chatTranslator) end(from int) {
	t.req.Input = append(t.req.Input, t.out[from:len(t.out):len(t.out)])
}

// easyInputMin is the size from which a plain text message is forwarded
// as the client sent it instead of being rewritten as a typed item.
const easyInputMin = 64 << 10

// messageKeys are the members of a Chat message the translator reads or
// accepts: name, audio and annotations are documented message fields the
// Responses API has no place for; they are accepted and not forwarded.
var messageKeys = []string{"role", "content", "refusal", "tool_calls", "tool_call_id", "function_call", "name", "audio", "annotations"}

// chatMessage is one Chat message.
type chatMessage struct {
	Role, Content, Refusal, ToolCalls, ToolCallID json.RawMessage
	// FunctionCall is the deprecated single call of an assistant message.
	FunctionCall json.RawMessage
	// Unknown is the first member that is not a Chat message field.
	Unknown string
	// Members counts the message's members.
	Members int
}

// decodeMessage decodes the message object at the start of raw and
// returns the index after it (-1 when raw does not start with an object).
func decodeMessage(raw []byte) (chatMessage, int) {
	var v [9]json.RawMessage
	unknown, n, end := pickEnd(raw, messageKeys, v[:])
	return chatMessage{Role: v[0], Content: v[1], Refusal: v[2], ToolCalls: v[3], ToolCallID: v[4],
		FunctionCall: v[5], Unknown: unknown, Members: n}, end
}

func (t *chatTranslator) messages(raw json.RawMessage) *apierr.Error {
	if isNull(raw) {
		return missing("messages")
	}
	if !isArray(raw) {
		return invalidType("messages", "an array")
	}
	if emptyArray(raw) {
		return invalidValue("messages", "Invalid 'messages': empty array. Expected an array with minimum length 1.")
	}
	// the items are about as large as the messages plus their type
	// envelopes; the lists grow as needed
	est := len(raw)/512 + 8
	t.req.History = make([]Message, 0, est)
	t.req.Input = make([]json.RawMessage, 0, est+est/2)
	t.out = bufpool.Get(len(raw) + len(raw)/8 + 1024)
	t.req.out = t.out
	// one walk: each message is decoded where its end is found
	i := jsonscan.SkipSpace(raw, 1)
	for n := 0; i < len(raw) && raw[i] != ']'; n++ {
		var cm chatMessage
		end := -1
		if raw[i] == '{' {
			if cm, end = decodeMessage(raw[i:]); end >= 0 {
				end += i
			}
		} else if e, ok := jsonscan.ValueEnd(raw, i); ok {
			end = e
		}
		if end < 0 {
			break // not reached for a validated body
		}
		if aerr := t.message(n, raw[i:end:end], &cm); aerr != nil {
			return aerr
		}
		if i = jsonscan.SkipSpace(raw, end); i < len(raw) && raw[i] == ',' {
			i = jsonscan.SkipSpace(raw, i+1)
		}
	}
	return nil
}

// message translates the message m, number i of the history, decoded as cm.
func (t *chatTranslator) message(i int, m json.RawMessage, cm *chatMessage) *apierr.Error {
	l := loc{i: i, j: -1}
	if !isObject(m) {
		return invalidType(l.String(), "an object")
	}
	if cm.Unknown != "" {
		return unknownParam(l.at("." + cm.Unknown))
	}
	role := typeName(cm.Role)
	if !isString(cm.Role) {
		if isNull(cm.Role) {
			return missing(l.at(".role"))
		}
		return invalidType(l.at(".role"), "a string")
	}
	from := len(t.req.Input)
	var aerr *apierr.Error
	switch role {
	case "system", "developer", "user":
		if cm.Members == 2 && isString(cm.Content) && len(cm.Content) >= easyInputMin {
			// {"role":…,"content":"…"} is already a Responses input
			// message (EasyInputMessage): a large one is sent as the
			// client's own bytes rather than copied
			t.req.Input = append(t.req.Input, m)
			t.req.aliased = append(t.req.aliased, m)
			break
		}
		aerr = t.inputMessage(l, role, cm.Content)
	case "assistant":
		aerr = t.assistant(l, cm)
	case "tool":
		aerr = t.toolResult(l, cm)
	case "function":
		aerr = unsupportedValue(l.at(".role"),
			"Unsupported value: role 'function' is deprecated and not supported; use tool messages.")
	default:
		aerr = invalidValue(l.at(".role"), fmt.Sprintf("Invalid value for '%s.role': unknown role.", l.String()))
	}
	if aerr != nil {
		return aerr
	}
	t.req.History = append(t.req.History, Message{Raw: m, Role: role, Items: [2]int{from, len(t.req.Input)}})
	return nil
}

// loc is the location of a message, content part or tool call in the
// request, formatted only when an error names it: "messages[i]" plus, when
// j >= 0, sub and "[j]" (e.g. "messages[3].content[1]").
type loc struct {
	i   int
	sub string
	j   int
}

// String formats l.
func (l loc) String() string {
	s := "messages[" + strconv.Itoa(l.i) + "]"
	if l.j >= 0 {
		s += l.sub + "[" + strconv.Itoa(l.j) + "]"
	}
	return s
}

// at formats l followed by suffix.
func (l loc) at(suffix string) string { return l.String() + suffix }

// part returns the location of the content part j of the message at l.
func (l loc) part(j int) loc { return loc{i: l.i, sub: ".content", j: j} }

// partKeys are the members of a Chat content part.
var partKeys = []string{"type", "text", "refusal", "image_url", "file", "input_audio"}

// chatPart is one content part of a Chat message.
type chatPart struct {
	Type                          string
	Text, Refusal, ImageURL, File json.RawMessage
	Unknown                       string // the first member that is not a Chat content part field
}

func decodePart(l loc, raw json.RawMessage) (chatPart, *apierr.Error) {
	if !isObject(raw) {
		return chatPart{}, invalidType(l.String(), "a content part object")
	}
	var v [6]json.RawMessage
	unknown, _ := pick(raw, partKeys, v[:])
	p := chatPart{Type: typeName(v[0]), Text: v[1], Refusal: v[2], ImageURL: v[3], File: v[4], Unknown: unknown}
	// Responses-style parts are forwarded as they are: the upstream
	// checks their members
	if p.Unknown != "" && p.Type != "input_text" && p.Type != "input_image" && p.Type != "input_file" {
		return p, unknownParam(l.at("." + p.Unknown))
	}
	return p, nil
}

// eachPart calls fn with every decoded content part of content, which must
// be an array.
func eachPart(l loc, content json.RawMessage, fn func(pl loc, p chatPart, raw json.RawMessage) *apierr.Error) *apierr.Error {
	if !isArray(content) {
		return invalidType(l.at(".content"), "a string or an array of content parts")
	}
	return elements(content, func(j int, raw json.RawMessage) *apierr.Error {
		pl := l.part(j)
		p, aerr := decodePart(pl, raw)
		if aerr != nil {
			return aerr
		}
		return fn(pl, p, raw)
	})
}

// inputMessage translates a system, developer or user message.
func (t *chatTranslator) inputMessage(l loc, role string, content json.RawMessage) *apierr.Error {
	if isNull(content) {
		return missing(l.at(".content"))
	}
	from := t.begin()
	t.out = append(t.out, `{"type":"message","role":`...)
	t.out = appendString(t.out, role)
	t.out = append(t.out, `,"content":`...)
	if isString(content) {
		t.out = append(t.out, content...)
		t.out = append(t.out, '}')
		t.end(from)
		return nil
	}
	t.out = append(t.out, '[')
	aerr := eachPart(l, content, func(pl loc, p chatPart, raw json.RawMessage) *apierr.Error {
		if pl.j > 0 {
			t.out = append(t.out, ',')
		}
		var aerr *apierr.Error
		switch {
		case p.Type == "text":
			if !isString(p.Text) {
				return invalidType(pl.at(".text"), "a string")
			}
			t.out = append(t.out, `{"type":"input_text","text":`...)
			t.out = append(t.out, p.Text...)
			t.out = append(t.out, '}')
		case p.Type == "image_url" && role == "user":
			t.out, aerr = appendImage(t.out, pl, p.ImageURL)
		case p.Type == "file" && role == "user":
			t.out, aerr = appendFile(t.out, pl, p.File)
		case p.Type == "input_audio" && role == "user":
			return unsupportedValue(pl.String(), "Unsupported content part: 'input_audio' is not supported by this model.")
		case (p.Type == "input_text" || p.Type == "input_image" || p.Type == "input_file") && role == "user":
			// Responses-style part inside a Chat body: already in upstream form.
			t.out = append(t.out, raw...)
		default:
			return invalidValue(pl.at(".type"), fmt.Sprintf("Invalid content part type for a %s message.", role))
		}
		return aerr
	})
	if aerr != nil {
		return aerr
	}
	t.out = append(t.out, ']', '}')
	t.end(from)
	return nil
}

var imageKeys = []string{"url", "detail"}

func appendImage(b []byte, l loc, raw json.RawMessage) ([]byte, *apierr.Error) {
	var v [2]json.RawMessage
	switch {
	case isString(raw):
		v[0] = raw
	case isObject(raw):
		pick(raw, imageKeys, v[:])
	default:
		return b, missing(l.at(".image_url"))
	}
	url, detail := v[0], v[1]
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

var fileKeys = []string{"file_data", "file_id", "filename"}

func appendFile(b []byte, l loc, raw json.RawMessage) ([]byte, *apierr.Error) {
	if !isObject(raw) {
		return b, invalidType(l.at(".file"), "an object")
	}
	var v [3]json.RawMessage
	pick(raw, fileKeys, v[:])
	b = append(b, `{"type":"input_file"`...)
	for i, k := range fileKeys {
		if isNull(v[i]) {
			continue
		}
		if !isString(v[i]) {
			return b, invalidType(l.at(".file."+k), "a string")
		}
		b = append(b, ',')
		b = appendString(b, k)
		b = append(b, ':')
		b = append(b, v[i]...)
	}
	return append(b, '}'), nil
}
