package translate

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

var (
	errNotObject = errors.New("event data is not a JSON object")
	errBadIndex  = errors.New("index is not a non-negative integer")
)

// decodeEvent validates data and fills ev from its members without
// reflection; values stay raw tokens until a handler needs them.
// Validation is as json.Valid's: a string that is not valid UTF-8 is
// accepted (and decoded with replacement characters).
func decodeEvent(data []byte, ev *streamEvent) error {
	// one pass validates the event and reports its members; json.Valid
	// only runs for what that refuses (invalid UTF-8 inside strings,
	// which json.Valid accepts, or invalid JSON, which the decoder then
	// describes)
	var err error
	member := func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "type":
			ev.Type = eventType(v)
		case "output_index":
			if !isNull(v) {
				ev.HasIndex = true
				if ev.OutputIndex, err = parseIndex(v, err); err != nil {
					ev.HasIndex = false
				}
			}
		case "content_index":
			if !isNull(v) {
				ev.ContentIndex, err = parseIndex(v, err)
			}
		case "item_id":
			if isString(v) {
				ev.ItemID = v[1 : len(v)-1]
			}
		case "delta":
			ev.Delta = v
		case "text":
			ev.Text = v
		case "refusal":
			ev.Refusal = v
		case "arguments":
			ev.Arguments = v
		case "input":
			ev.Input = v
		case "part":
			ev.Part = v
		case "item":
			ev.Item = v
		case "response":
			ev.Response = v
		case "error":
			ev.Error = v
		case "code":
			ev.Code = v
		case "message":
			ev.Message = v
		case "param":
			ev.Param = v
		}
	}
	if scanJSON(data, func(k, v []byte) {
		if bytes.IndexByte(k, '\\') < 0 {
			member(k[1:len(k)-1], v)
		} else if s, ok := unquote(k); ok {
			member([]byte(s), v)
		}
	}) {
		if !isObject(data[jsonscan.SkipSpace(data, 0):]) {
			return errNotObject
		}
		return err
	}
	if !json.Valid(data) {
		var v any
		return json.Unmarshal(data, &v)
	}
	if !isObject(data[jsonscan.SkipSpace(data, 0):]) {
		return errNotObject
	}
	*ev, err = streamEvent{}, nil // the failed pass may have set members
	members(data, member)
	return err
}

// parseIndex parses a small non-negative integer; prev carries an earlier
// error through.
func parseIndex(raw json.RawMessage, prev error) (int, error) {
	if prev != nil {
		return 0, prev
	}
	if len(raw) == 0 || len(raw) > 9 {
		return 0, errBadIndex
	}
	n := 0
	for _, c := range raw {
		if c < '0' || c > '9' {
			return 0, errBadIndex
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

// eventType returns the event type of a "type" token; known types are
// returned without allocating.
func eventType(raw json.RawMessage) string {
	if !isString(raw) {
		return ""
	}
	switch string(raw[1 : len(raw)-1]) {
	case "response.output_text.delta":
		return "response.output_text.delta"
	case "response.function_call_arguments.delta":
		return "response.function_call_arguments.delta"
	case "response.custom_tool_call_input.delta":
		return "response.custom_tool_call_input.delta"
	case "response.reasoning_summary_text.delta":
		return "response.reasoning_summary_text.delta"
	case "response.reasoning_text.delta":
		return "response.reasoning_text.delta"
	case "response.refusal.delta":
		return "response.refusal.delta"
	}
	s, _ := unquote(raw)
	return s
}

// decodeToken decodes a string token. When the token has no escapes and
// is valid UTF-8 it is returned as tok, to be copied to the output as is,
// and the text aliases it. A null or absent token is the empty string;
// ok is false for any other non-string.
func decodeToken(raw json.RawMessage) (text []byte, tok json.RawMessage, ok bool) {
	if isNull(raw) {
		return nil, nil, true
	}
	if !isString(raw) || len(raw) < 2 {
		return nil, nil, false
	}
	inner := raw[1 : len(raw)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return inner, raw, true
	}
	text, ok = appendUnquoted(make([]byte, 0, len(inner)), raw)
	return text, nil, ok
}

// appendToken appends text as a JSON string, copying tok when given.
func appendToken(dst, text []byte, tok json.RawMessage) []byte {
	if tok != nil {
		return append(dst, tok...)
	}
	return appendString(dst, string(text))
}
