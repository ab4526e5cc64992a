package translate

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

// Result describes what one upstream event did.
type Result struct {
	// Terminal is true for response.completed, .incomplete, .failed and error.
	Terminal bool
}

// Stream converts one upstream Responses SSE stream into Chat chunks. It is
// not safe for concurrent use.
type Stream struct {
	opts ChatOptions

	id      string
	created int64
	model   string
	prefix  []byte // `{"id":...,"model":...,"choices":[`
	started bool   // the role chunk has been produced
	ended   bool   // Finish or Fail has run

	items    []*itemState
	calls    []*itemState // tool call items by Chat index
	content  []byte
	refusal  []byte
	terminal bool
	failed   *apierr.Error
	finish   string
	usage    *Usage

	responseID string
	output     []json.RawMessage // terminal output, when given
	haveOutput bool
	status     string // terminal status: completed, incomplete, failed
	snapshot   string // the terminal response's model

	doneBytes  int64 // bytes of the kept output_item.done copies
	recordOver bool  // a copy was dropped at opts.RecordLimit
}

// itemState tracks one upstream output item.
type itemState struct {
	outputIndex int
	id          string
	typ         string
	call        int // Chat tool call index, -1 when not a call
	name        string
	callID      string
	args        []byte // arguments (or custom input) sent so far
	parts       []partState
	done        json.RawMessage // the output_item.done item
}

// partState is the text streamed for one content part.
type partState struct {
	index   int
	refusal bool
	text    []byte
}

// NewStream returns a converter for one client response.
func NewStream(opts ChatOptions) *Stream {
	return &Stream{opts: opts, id: opts.ID, created: opts.Created, model: opts.Model}
}

// streamEvent holds the members of one upstream event that the relay
// reads, as raw tokens; see decodeEvent.
type streamEvent struct {
	Type         string
	OutputIndex  int
	HasIndex     bool   // output_index was present
	ItemID       []byte // item_id without quotes
	ContentIndex int
	Delta        json.RawMessage
	Text         json.RawMessage
	Refusal      json.RawMessage
	Arguments    json.RawMessage
	Input        json.RawMessage
	Part         json.RawMessage
	Item         json.RawMessage
	Response     json.RawMessage
	Error        json.RawMessage
	Code         json.RawMessage
	Message      json.RawMessage
	Param        json.RawMessage
}

// Started reports whether any frame has been produced.
func (s *Stream) Started() bool { return s.started || s.ended }

// Event converts one upstream SSE event (its event: name, possibly empty,
// and data: payload) and appends zero or more complete client frames to
// dst. It returns Terminal=true for a terminal event; the terminal frames
// are not appended by Event but by Finish. A terminal success event may
// still append content frames for output the upstream did not stream as
// deltas. Unknown event types are ignored; malformed JSON and protocol
// violations are errors, after which the caller should Fail the stream.
func (s *Stream) Event(dst []byte, event string, data []byte) ([]byte, Result, error) {
	if s.terminal || s.ended {
		return dst, Result{}, nil
	}
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		return dst, Result{}, nil
	}
	var ev streamEvent
	if err := decodeEvent(data, &ev); err != nil {
		return dst, Result{}, fmt.Errorf("translate: malformed upstream event %q: %w", event, err)
	}
	typ := ev.Type
	if typ == "" {
		typ = event
	}
	var err error
	switch typ {
	case "response.created", "response.in_progress", "response.queued":
		if !s.started {
			var r upstreamResponse
			if len(ev.Response) > 0 && decodeResponse(ev.Response, &r, true) == nil {
				s.adopt(&r)
			}
		}
		if typ == "response.created" {
			dst = s.start(dst)
		}
	case "response.output_item.added":
		dst, err = s.itemAdded(dst, &ev)
	case "response.output_text.delta", "response.refusal.delta":
		delta, tok, ok := decodeToken(ev.Delta)
		if !ok {
			return dst, Result{}, fmt.Errorf("translate: %s: delta is not a string", typ)
		}
		it := s.item(&ev, "message")
		dst = s.text(dst, it.part(ev.ContentIndex, typ == "response.refusal.delta"), delta, tok)
	case "response.output_text.done", "response.refusal.done":
		final, refusal := ev.Text, false
		if typ == "response.refusal.done" {
			final, refusal = ev.Refusal, true
		}
		if !isNull(final) {
			text, ok := unquote(final)
			if !ok {
				return dst, Result{}, fmt.Errorf("translate: %s: final text is not a string", typ)
			}
			dst, err = s.tail(dst, s.item(&ev, "message").part(ev.ContentIndex, refusal), text)
		}
	case "response.content_part.done":
		if !isNull(ev.Part) {
			var part outputPart
			if jerr := decodePartDone(ev.Part, &part, true); jerr != nil {
				return dst, Result{}, fmt.Errorf("translate: malformed content part: %w", jerr)
			}
			dst, err = s.partDone(dst, s.item(&ev, "message"), ev.ContentIndex, &part)
		}
	case "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		it := s.find(&ev)
		if it == nil || it.call < 0 {
			return dst, Result{}, fmt.Errorf("translate: %s for an unannounced tool call", typ)
		}
		delta, tok, ok := decodeToken(ev.Delta)
		if !ok {
			return dst, Result{}, fmt.Errorf("translate: %s: delta is not a string", typ)
		}
		dst = s.args(dst, it, delta, tok)
	case "response.function_call_arguments.done", "response.custom_tool_call_input.done":
		final := ev.Arguments
		if typ == "response.custom_tool_call_input.done" {
			final = ev.Input
		}
		it := s.find(&ev)
		if it == nil || it.call < 0 {
			return dst, Result{}, fmt.Errorf("translate: %s for an unannounced tool call", typ)
		}
		if !isNull(final) {
			args, ok := unquote(final)
			if !ok {
				return dst, Result{}, fmt.Errorf("translate: %s: final arguments are not a string", typ)
			}
			dst, err = s.argsTail(dst, it, args)
		}
	case "response.output_item.done":
		dst, err = s.itemDone(dst, &ev)
	case "response.completed", "response.incomplete":
		dst, err = s.completed(dst, &ev)
		if err == nil {
			return dst, Result{Terminal: true}, nil
		}
	case "response.failed":
		var r upstreamResponse
		if len(ev.Response) > 0 {
			if jerr := decodeResponse(ev.Response, &r, true); jerr != nil {
				return dst, Result{}, fmt.Errorf("translate: malformed response.failed: %w", jerr)
			}
		}
		s.responseID = r.ID
		s.failed = failure(r.Error, true)
		s.terminal = true
		return dst, Result{Terminal: true}, nil
	case "error":
		e := &upstreamError{}
		if isObject(ev.Error) {
			if jerr := decodeError(ev.Error, e, true); jerr != nil {
				return dst, Result{}, fmt.Errorf("translate: malformed error event: %w", jerr)
			}
		} else {
			e.Code, _ = unquote(ev.Code)
			e.Message, _ = unquote(ev.Message)
			e.Param, _ = unquote(ev.Param)
		}
		s.failed = failure(e, true)
		s.terminal = true
		return dst, Result{Terminal: true}, nil
	}
	return dst, Result{}, err
}
