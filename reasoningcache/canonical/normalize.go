package canonical

import (
	"fmt"
	"strconv"
)

// Shape names the request shape whose visible history is identified.
type Shape uint8

// Request shapes.
const (
	// ShapeChat: envelopes are the messages[] objects of a Chat
	// Completions body.
	ShapeChat Shape = 1
	// ShapeResponses: envelopes are the input items of a Responses-shaped
	// body (Cursor's Agent mode); a string input is passed as one JSON
	// string envelope and identified as a user message.
	ShapeResponses Shape = 2
)

// String returns the name used in the canonical scope: "chat" or
// "responses".
func (s Shape) String() string {
	switch s {
	case ShapeChat:
		return "chat"
	case ShapeResponses:
		return "responses"
	}
	return fmt.Sprintf("Shape(%d)", uint8(s))
}

func (s Shape) valid() bool { return s == ShapeChat || s == ShapeResponses }

// Kind classifies one history envelope.
type Kind uint8

// Envelope kinds.
const (
	// KindOther is every non-assistant envelope: system, developer, user
	// and tool messages, tool outputs, reasoning and unknown items.
	KindOther Kind = iota
	// KindAssistant is an assistant message (Chat role "assistant";
	// Responses item type "message" with role "assistant").
	KindAssistant
	// KindToolCall is a Responses function_call or custom_tool_call item.
	// In the Chat shape tool calls live inside assistant messages.
	KindToolCall
)

// String returns a short name for k.
func (k Kind) String() string {
	switch k {
	case KindOther:
		return "other"
	case KindAssistant:
		return "assistant"
	case KindToolCall:
		return "tool_call"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Assistant reports whether k belongs to an assistant block.
func (k Kind) Assistant() bool { return k == KindAssistant || k == KindToolCall }

// normalize classifies the parsed envelope root and applies the shape's
// normalization rules. It returns the (possibly new) root.
func (a *arena) normalize(shape Shape, root uint32) (uint32, Kind, Reason) {
	switch shape {
	case ShapeChat:
		if a.nodes[root].kind != kObject {
			return 0, 0, ReasonNotMessage
		}
		var f fields
		a.find(root, &f)
		if f.has&hasRole != 0 && a.isString(f.role, "assistant") {
			a.normChatAssistant(root, &f)
			return root, KindAssistant, ""
		}
		return root, KindOther, ""
	default:
		switch a.nodes[root].kind {
		case kString:
			return a.stringInput(root), KindOther, ""
		case kObject:
		default:
			return 0, 0, ReasonNotMessage
		}
		var f fields
		a.find(root, &f)
		typeName := []byte("message")
		switch {
		case f.has&hasType != 0:
			typeName = a.stringValue(f.typ)
		case f.has&hasRole != 0:
			a.insert(root, "type", a.stringNode("message"))
		}
		switch string(typeName) {
		case "message":
			if f.has&hasRole != 0 && a.isString(f.role, "assistant") {
				a.removeIDStatus(&f)
				a.normContent(root, f.content, f.has&hasContent != 0, "output_text", true)
				return root, KindAssistant, ""
			}
		case "function_call", "custom_tool_call":
			a.removeIDStatus(&f)
			return root, KindToolCall, ""
		}
		return root, KindOther, ""
	}
}

// fields are the members of an envelope that normalization looks at,
// found in one pass over its members (find).
type fields struct {
	has                            uint16 // hasType, hasRole, ...
	typ, role, id, status, content uint32
	toolCalls, refusal             uint32
	functionCall, audio            uint32
	annotations                    uint32
}

const (
	hasType = 1 << iota
	hasRole
	hasID
	hasStatus
	hasContent
	hasToolCalls
	hasRefusal
	hasFunctionCall
	hasAudio
	hasAnnotations
)

// find records the live members of object obj that normalization reads.
// Keys are unique (sortAll refused duplicates), so each is found at most
// once.
func (a *arena) find(obj uint32, f *fields) {
	for _, k := range a.children(obj) {
		if a.nodes[k].gone {
			continue
		}
		switch string(a.keyBytes(k)) {
		case "type":
			f.typ, f.has = k, f.has|hasType
		case "role":
			f.role, f.has = k, f.has|hasRole
		case "id":
			f.id, f.has = k, f.has|hasID
		case "status":
			f.status, f.has = k, f.has|hasStatus
		case "content":
			f.content, f.has = k, f.has|hasContent
		case "tool_calls":
			f.toolCalls, f.has = k, f.has|hasToolCalls
		case "refusal":
			f.refusal, f.has = k, f.has|hasRefusal
		case "function_call":
			f.functionCall, f.has = k, f.has|hasFunctionCall
		case "audio":
			f.audio, f.has = k, f.has|hasAudio
		case "annotations":
			f.annotations, f.has = k, f.has|hasAnnotations
		}
	}
}

// removeIDStatus drops the "id" and "status" members that find saw.
func (a *arena) removeIDStatus(f *fields) {
	if f.has&hasID != 0 {
		a.remove(f.id)
	}
	if f.has&hasStatus != 0 {
		a.remove(f.status)
	}
}

// stringInput turns a Responses string input into the user message it
// means: {"content":<string>,"role":"user","type":"message"}.
func (a *arena) stringInput(str uint32) uint32 {
	a.nodes[str].key = a.literal("content")
	role := a.stringNode("user")
	a.nodes[role].key = a.literal("role")
	typ := a.stringNode("message")
	a.nodes[typ].key = a.literal("type")
	return a.container(kObject, []uint32{str, role, typ})
}

// normChatAssistant applies the Chat assistant rules (see the package
// documentation).
func (a *arena) normChatAssistant(obj uint32, f *fields) {
	a.normContent(obj, f.content, f.has&hasContent != 0, "text", false)
	if f.has&hasToolCalls != 0 {
		m := f.toolCalls
		n := a.nodes[m]
		switch {
		case n.kind == kNull, n.kind == kArray && n.count == 0:
			a.remove(m)
		case n.kind == kArray:
			var buf [20]byte
			for pos, call := range a.children(m) {
				idx, ok := a.member(call, "index")
				if ok && a.nodes[idx].kind == kNumber &&
					string(a.bytesOf(a.nodes[idx].val)) == string(strconv.AppendInt(buf[:0], int64(pos), 10)) {
					a.remove(idx)
				}
			}
		}
	}
	for _, m := range [...]struct {
		has  uint16
		node uint32
	}{{hasRefusal, f.refusal}, {hasFunctionCall, f.functionCall}, {hasAudio, f.audio}} {
		if f.has&m.has != 0 && a.nodes[m.node].kind == kNull {
			a.remove(m.node)
		}
	}
	if f.has&hasAnnotations != 0 && a.emptyArray(f.annotations) {
		a.remove(f.annotations)
	}
}

func (a *arena) emptyArray(i uint32) bool {
	return a.nodes[i].kind == kArray && a.nodes[i].count == 0
}

func (a *arena) removeNamed(obj uint32, keys ...string) {
	for _, key := range keys {
		if m, ok := a.member(obj, key); ok {
			a.remove(m)
		}
	}
}

// normContent makes content a string when it is one of the equivalent
// text forms: absent, null, "", [] and an array of exact text parts all
// become the text (parts concatenated in order). Any other content (parts
// with extra fields, refusals, images) stays exactly as sent. m is the
// content member of obj (ok false when there is none).
func (a *arena) normContent(obj, m uint32, ok bool, partType string, outputPart bool) {
	if !ok {
		a.insert(obj, "content", a.stringNode(""))
		return
	}
	switch a.nodes[m].kind {
	case kNull:
		a.replace(obj, m, a.stringNode(""))
	case kArray:
		parts := a.children(m)
		if len(parts) == 0 {
			a.replace(obj, m, a.stringNode(""))
			return
		}
		mark := len(a.stack)
		for _, p := range parts {
			text, ok := a.exactTextPart(p, partType, outputPart)
			if !ok {
				a.stack = a.stack[:mark]
				return
			}
			a.stack = append(a.stack, text)
		}
		var v uint32
		if len(parts) == 1 {
			v = a.add(a.nodes[a.stack[mark]])
		} else {
			v = a.container(kConcat, a.stack[mark:])
		}
		a.stack = a.stack[:mark]
		a.replace(obj, m, v)
	}
}

// exactTextPart reports whether p is exactly {"type":partType,"text":s}
// (output_text parts may also carry empty "annotations" and "logprobs"
// lists, which is how a client echoes an output item) and returns the text
// node.
func (a *arena) exactTextPart(p uint32, partType string, outputPart bool) (uint32, bool) {
	if a.nodes[p].kind != kObject {
		return 0, false
	}
	var text uint32
	hasType, hasText := false, false
	for _, k := range a.children(p) {
		if a.nodes[k].gone {
			continue
		}
		switch string(a.keyBytes(k)) {
		case "type":
			if !a.isString(k, partType) {
				return 0, false
			}
			hasType = true
		case "text":
			if a.nodes[k].kind != kString {
				return 0, false
			}
			text, hasText = k, true
		case "annotations", "logprobs":
			if !outputPart || !a.emptyArray(k) {
				return 0, false
			}
		default:
			return 0, false
		}
	}
	return text, hasType && hasText
}
