package translate

// The frames a Stream writes: the role chunk, content, refusal and tool
// call deltas, and what a final text or argument adds to what was streamed.

import (
	"encoding/json"
	"fmt"
)

// adopt takes id, created and model from the upstream response.
func (s *Stream) adopt(r *upstreamResponse) {
	if r.ID != "" {
		s.responseID = r.ID
		s.id = chatID(r.ID, s.opts.ID)
	}
	if r.CreatedAt > 0 && r.CreatedAt < 1e15 {
		s.created = int64(r.CreatedAt)
	}
	if r.Model != "" {
		s.model = r.Model
	}
}

// start appends the role chunk once, fixing id, created and model.
func (s *Stream) start(dst []byte) []byte {
	if s.started {
		return dst
	}
	s.started = true
	p := make([]byte, 0, 96+len(s.id)+len(s.model))
	p = append(p, `{"id":`...)
	p = appendString(p, s.id)
	p = append(p, `,"object":"chat.completion.chunk","created":`...)
	p = appendInt(p, s.created)
	p = append(p, `,"model":`...)
	p = appendString(p, s.model)
	p = append(p, `,"choices":[`...)
	s.prefix = p
	dst = s.open(dst)
	dst = append(dst, `"role":"assistant","content":""`...)
	return s.close(dst, "")
}

// open appends the start of a choice chunk up to the inside of delta.
func (s *Stream) open(dst []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, s.prefix...)
	return append(dst, `{"index":0,"delta":{`...)
}

// close ends a chunk opened by open.
func (s *Stream) close(dst []byte, finish string) []byte {
	dst = append(dst, `},"logprobs":null,"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = appendString(dst, finish)
	}
	dst = append(dst, '}', ']')
	if s.opts.IncludeUsage {
		dst = append(dst, `,"usage":null`...)
	}
	return append(dst, "}\n\n"...)
}

// text appends a content or refusal delta chunk. tok is delta's JSON
// string token when it can be copied as is, else nil.
func (s *Stream) text(dst []byte, p *partState, delta []byte, tok json.RawMessage) []byte {
	if len(delta) == 0 {
		return dst
	}
	dst = s.start(dst)
	p.text = append(p.text, delta...)
	dst = s.open(dst)
	if p.refusal {
		s.refusal = append(s.refusal, delta...)
		dst = append(dst, `"refusal":`...)
	} else {
		s.content = append(s.content, delta...)
		dst = append(dst, `"content":`...)
	}
	dst = appendToken(dst, delta, tok)
	return s.close(dst, "")
}

// tail emits what final has beyond what was streamed for p.
func (s *Stream) tail(dst []byte, p *partState, final string) ([]byte, error) {
	if len(final) < len(p.text) || final[:len(p.text)] != string(p.text) {
		return dst, fmt.Errorf("translate: final text of content part %d differs from the streamed text", p.index)
	}
	return s.text(dst, p, []byte(final[len(p.text):]), nil), nil
}

func (s *Stream) partDone(dst []byte, it *itemState, index int, part *outputPart) ([]byte, error) {
	switch part.Type {
	case "output_text":
		return s.tail(dst, it.part(index, false), part.Text)
	case "refusal":
		return s.tail(dst, it.part(index, true), part.Refusal)
	}
	return dst, nil
}

// startCall appends the first chunk of a tool call: index, id, type and
// name, with whatever arguments the item already carries.
func (s *Stream) startCall(dst []byte, it *itemState, oi *outputItem) []byte {
	dst = s.start(dst)
	it.call = len(s.calls)
	it.name, it.callID = oi.Name, oi.CallID
	s.calls = append(s.calls, it)
	args := oi.payload()
	it.args = append(it.args, args...)
	dst = s.open(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = appendInt(dst, int64(it.call))
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, oi.CallID)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = appendString(dst, oi.Name)
	dst = append(dst, `,"arguments":`...)
	dst = appendString(dst, args)
	dst = append(dst, `}}]`...)
	return s.close(dst, "")
}

// args appends an arguments delta chunk for a tool call; tok as for text.
func (s *Stream) args(dst []byte, it *itemState, delta []byte, tok json.RawMessage) []byte {
	if len(delta) == 0 {
		return dst
	}
	it.args = append(it.args, delta...)
	dst = s.open(dst)
	dst = append(dst, `"tool_calls":[{"index":`...)
	dst = appendInt(dst, int64(it.call))
	dst = append(dst, `,"function":{"arguments":`...)
	dst = appendToken(dst, delta, tok)
	dst = append(dst, `}}]`...)
	return s.close(dst, "")
}

// argsTail emits the part of final arguments not streamed yet.
func (s *Stream) argsTail(dst []byte, it *itemState, final string) ([]byte, error) {
	if len(final) < len(it.args) || final[:len(it.args)] != string(it.args) {
		return dst, fmt.Errorf("translate: final arguments of tool call %d differ from the streamed ones", it.call)
	}
	return s.args(dst, it, []byte(final[len(it.args):]), nil), nil
}
