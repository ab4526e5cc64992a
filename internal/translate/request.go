package translate

import (
	"encoding/json"
	"fmt"
	"sort"
)

// Shape says which request format a client used.
type Shape int

// Request shapes accepted on /chat/completions.
const (
	// ShapeChat is a classic Chat Completions body with "messages".
	ShapeChat Shape = iota + 1
	// ShapeResponses is a Responses-shaped body with "input".
	ShapeResponses
)

// String returns "chat" or "responses".
func (s Shape) String() string {
	switch s {
	case ShapeChat:
		return "chat"
	case ShapeResponses:
		return "responses"
	}
	return "unknown"
}

// Field is one top-level field of the upstream Responses request.
type Field struct {
	// Key is the field name.
	Key string
	// Value is the field's JSON value.
	Value json.RawMessage
}

// Request is one client request translated to a Responses request.
type Request struct {
	// Shape is the format the client used.
	Shape Shape
	// ClientModel is the model as the client named it.
	ClientModel string
	// Model is the resolved upstream model.
	Model string
	// Stream reports whether the client asked for a stream.
	Stream bool
	// IncludeUsage is stream_options.include_usage (consumed, never sent upstream).
	IncludeUsage bool
	// Eligible marks a reasoning model: store:false and
	// include:["reasoning.encrypted_content"] are set (see
	// KeepCallerStorage for requests the cache does not handle).
	Eligible bool
	// Fields are the top-level upstream fields other than input, in a
	// stable order: model first, then known fields in a fixed order, then
	// any others sorted by name.
	Fields []Field
	// Input holds the translated Responses input items, in order.
	Input []json.RawMessage
	// History is the client's visible history, one entry per message (Chat)
	// or input item (Responses shape).
	History []Message

	callerStore, callerInclude json.RawMessage // explicit caller values an eligible request overrode

	aliased    []json.RawMessage // Chat input items that are bytes of the client body
	clientSize int               // the client body's size, for ReleaseClientBody
	out        []byte            // the buffer the Chat input items were built in (package bufpool), for Recycle
}

// KeepCallerStorage puts the caller's explicit store and include values
// back on an eligible request: the relay overrides them (store:false and
// the reasoning include) only for requests the reasoning cache handles, so
// a request relayed with the cache disabled or bypassed goes upstream with
// what the caller asked for. Values the caller did not send keep the
// relay's.
func (r *Request) KeepCallerStorage() {
	if r.callerStore != nil {
		r.SetField("store", r.callerStore)
	}
	if r.callerInclude != nil {
		r.SetField("include", r.callerInclude)
	}
}

// Message is one visible history entry as the client sent it.
type Message struct {
	// Raw is the exact envelope the client sent: the chat message object,
	// or for the Responses shape the input item (a string input is
	// represented by the user message item it becomes).
	Raw json.RawMessage
	// Role is system, developer, user, assistant or tool. For Responses
	// items it is the item's role, "assistant" for function_call,
	// custom_tool_call, reasoning and other *_call items, "tool" for
	// *_output items, and empty for anything else.
	Role string
	// Items is the [from, to) range of Request.Input produced by this message.
	Items [2]int
}

// Field returns the value of the upstream field key.
func (r *Request) Field(key string) (json.RawMessage, bool) {
	for _, f := range r.Fields {
		if f.Key == key {
			return f.Value, true
		}
	}
	return nil, false
}

// SetField sets a top-level upstream member, replacing an existing one in
// place or appending it.
func (r *Request) SetField(key string, value json.RawMessage) {
	for i := range r.Fields {
		if r.Fields[i].Key == key {
			r.Fields[i].Value = value
			return
		}
	}
	r.Fields = append(r.Fields, Field{Key: key, Value: value})
}

// Body encodes the upstream Responses request JSON from Fields and Input
// (deterministic output). Fields come first in their order, "input" last.
func (r *Request) Body() ([]byte, error) {
	n := 32
	for _, f := range r.Fields {
		n += len(f.Key) + len(f.Value) + 4
	}
	for _, it := range r.Input {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for _, f := range r.Fields {
		if f.Key == "input" {
			return nil, fmt.Errorf("translate: body: field %q duplicates the input items", f.Key)
		}
		if len(f.Value) == 0 {
			return nil, fmt.Errorf("translate: body: field %q has no value", f.Key)
		}
		b = appendString(b, f.Key)
		b = append(b, ':')
		b = append(b, f.Value...)
		b = append(b, ',')
	}
	b = append(b, `"input":[`...)
	for i, it := range r.Input {
		if len(it) == 0 {
			return nil, fmt.Errorf("translate: body: input item %d is empty", i)
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']', '}')
	return b, nil
}

// fieldRank fixes the order of the fields the relay knows about.
var fieldRank = func() map[string]int {
	order := []string{
		"model", "instructions", "tools", "tool_choice", "parallel_tool_calls", "text",
		"reasoning", "max_output_tokens", "max_tool_calls", "temperature", "top_p",
		"top_logprobs", "truncation", "stream", "stream_options", "background", "store",
		"include", "previous_response_id", "conversation", "user", "safety_identifier",
		"prompt_cache_key", "prompt_cache_retention", "prompt_cache_options", "metadata",
		"service_tier", "moderation",
	}
	m := make(map[string]int, len(order))
	for i, k := range order {
		m[k] = i
	}
	return m
}()

// fieldSet collects upstream fields before they are ordered.
type fieldSet map[string]json.RawMessage

// ordered returns the fields in the stable order documented on Request.Fields.
func (fs fieldSet) ordered() []Field {
	out := make([]Field, 0, len(fs))
	for k, v := range fs {
		out = append(out, Field{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool {
		ri, iok := fieldRank[out[i].Key]
		rj, jok := fieldRank[out[j].Key]
		switch {
		case iok && jok:
			return ri < rj
		case iok != jok:
			return iok
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// sortedKeys returns the keys of m in lexical order, so that the first
// error reported for a body does not depend on map iteration order.
func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
