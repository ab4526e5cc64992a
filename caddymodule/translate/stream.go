package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/reasoning-relay/caddy-reasoning-relay/caddymodule/apierr"
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

	doneBytes   int64 // bytes of the kept output_item.done copies
	captureOver bool  // a copy was dropped at opts.CaptureLimit
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
			if len(ev.Response) > 0 && json.Unmarshal(ev.Response, &r) == nil {
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
			if jerr := json.Unmarshal(ev.Part, &part); jerr != nil {
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
			if jerr := json.Unmarshal(ev.Response, &r); jerr != nil {
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
			if jerr := json.Unmarshal(ev.Error, e); jerr != nil {
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

// find returns the item an event refers to, by output_index or item_id.
func (s *Stream) find(ev *streamEvent) *itemState {
	for _, it := range s.items {
		if ev.HasIndex {
			if it.outputIndex == ev.OutputIndex {
				return it
			}
		} else if len(ev.ItemID) > 0 && it.id == string(ev.ItemID) {
			return it
		}
	}
	return nil
}

// item returns the item an event refers to, creating it when unknown.
func (s *Stream) item(ev *streamEvent, typ string) *itemState {
	if it := s.find(ev); it != nil {
		return it
	}
	idx := len(s.items)
	if ev.HasIndex {
		idx = ev.OutputIndex
	}
	it := &itemState{outputIndex: idx, id: string(ev.ItemID), typ: typ, call: -1}
	s.items = append(s.items, it)
	return it
}

// part returns the state of content part index of kind refusal or text.
func (it *itemState) part(index int, refusal bool) *partState {
	for i := range it.parts {
		if it.parts[i].index == index && it.parts[i].refusal == refusal {
			return &it.parts[i]
		}
	}
	it.parts = append(it.parts, partState{index: index, refusal: refusal})
	return &it.parts[len(it.parts)-1]
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

// itemAdded registers an output item; a tool call gets its Chat index and
// its header chunk (id, type, name) now.
func (s *Stream) itemAdded(dst []byte, ev *streamEvent) ([]byte, error) {
	var oi outputItem
	if err := json.Unmarshal(ev.Item, &oi); err != nil {
		return dst, fmt.Errorf("translate: malformed output_item.added: %w", err)
	}
	if len(ev.ItemID) == 0 {
		ev.ItemID = []byte(oi.ID)
	}
	it := s.find(ev)
	if it == nil {
		it = s.item(ev, oi.Type)
	}
	if it.id == "" {
		it.id = oi.ID
	}
	if !oi.isCall() || it.call >= 0 {
		return dst, nil
	}
	it.typ = oi.Type
	return s.startCall(dst, it, &oi), nil
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

// reconcile emits whatever a final output item carries beyond what was
// streamed for it.
func (s *Stream) reconcile(dst []byte, it *itemState, oi *outputItem) ([]byte, error) {
	if it.id != "" && oi.ID != "" && it.id != oi.ID {
		return dst, fmt.Errorf("translate: output item %d changed id", it.outputIndex)
	}
	switch {
	case oi.Type == "message":
		var err error
		for i := range oi.Content {
			if dst, err = s.partDone(dst, it, i, &oi.Content[i]); err != nil {
				return dst, err
			}
		}
	case oi.isCall():
		if it.call < 0 {
			if len(it.parts) > 0 {
				return dst, fmt.Errorf("translate: output item %d changed type", it.outputIndex)
			}
			it.typ = oi.Type
			return s.startCall(dst, it, oi), nil
		}
		return s.argsTail(dst, it, oi.payload())
	}
	return dst, nil
}

func (s *Stream) itemDone(dst []byte, ev *streamEvent) ([]byte, error) {
	var oi outputItem
	if err := json.Unmarshal(ev.Item, &oi); err != nil {
		return dst, fmt.Errorf("translate: malformed output_item.done: %w", err)
	}
	if len(ev.ItemID) == 0 {
		ev.ItemID = []byte(oi.ID)
	}
	it := s.item(ev, oi.Type)
	if s.keepCapture(&s.doneBytes, int64(len(ev.Item))) {
		it.done = append(json.RawMessage(nil), ev.Item...)
	}
	return s.reconcile(dst, it, &oi)
}

// completed handles response.completed and response.incomplete.
func (s *Stream) completed(dst []byte, ev *streamEvent) ([]byte, error) {
	var r upstreamResponse
	if len(ev.Response) > 0 {
		if err := json.Unmarshal(ev.Response, &r); err != nil {
			return dst, fmt.Errorf("translate: malformed %s: %w", ev.Type, err)
		}
	}
	if !s.started {
		s.adopt(&r)
	}
	if r.ID != "" {
		s.responseID = r.ID
	}
	if r.Output != nil {
		var n int64
		for _, raw := range r.Output {
			n += int64(len(raw))
		}
		var kept int64
		s.haveOutput = true
		if s.keepCapture(&kept, n) {
			s.output = r.Output
		}
		for i, raw := range r.Output {
			var oi outputItem
			if err := json.Unmarshal(raw, &oi); err != nil {
				return dst, fmt.Errorf("translate: malformed output item %d: %w", i, err)
			}
			if oi.Type != "message" && !oi.isCall() {
				continue
			}
			var err error
			if dst, err = s.reconcile(dst, s.item(&streamEvent{OutputIndex: i, HasIndex: true, ItemID: []byte(oi.ID)}, oi.Type), &oi); err != nil {
				return dst, err
			}
		}
	}
	status := r.Status
	if status == "" {
		status = strings.TrimPrefix(ev.Type, "response.")
	}
	reason := ""
	if r.IncompleteDetails != nil {
		reason = r.IncompleteDetails.Reason
	}
	s.finish = finishReason(status, reason, len(s.calls) > 0)
	s.usage = r.Usage
	s.status, s.snapshot = status, r.Model
	s.terminal = true
	return dst, nil
}

// Finish appends the terminal frames: for success the finish_reason chunk,
// the usage chunk when IncludeUsage, then "data: [DONE]\n\n"; for a failure
// the error frame only. A stream that saw no terminal event gets an error
// frame. Finish appends nothing after the stream has ended.
func (s *Stream) Finish(dst []byte) []byte {
	if s.ended {
		return dst
	}
	if s.failed != nil {
		return s.Fail(dst, s.failed)
	}
	if !s.terminal {
		return s.Fail(dst, badUpstream("The upstream stream ended before the response was complete."))
	}
	dst = s.start(dst)
	s.ended = true
	dst = s.open(dst)
	dst = s.close(dst, s.finish)
	if s.opts.IncludeUsage {
		dst = append(dst, "data: "...)
		dst = append(dst, s.prefix...)
		dst = append(dst, `],"usage":`...)
		dst = appendChatUsage(dst, s.usage)
		dst = append(dst, "}\n\n"...)
	}
	return append(dst, "data: [DONE]\n\n"...)
}

// Fail appends an error frame for a stream that ended abnormally (cut,
// malformed, timeout). It appends nothing after the stream has ended.
func (s *Stream) Fail(dst []byte, e *apierr.Error) []byte {
	if s.ended {
		return dst
	}
	s.ended = true
	if e == nil {
		e = apierr.New(http.StatusBadGateway, apierr.TypeUpstream, "", "The upstream stream failed.")
	}
	dst = append(dst, "data: "...)
	dst = append(dst, e.JSON()...)
	return append(dst, "\n\n"...)
}

// Err returns the upstream failure of a failed stream, or nil.
func (s *Stream) Err() *apierr.Error { return s.failed }

// ResponseID returns the upstream response id, when known.
func (s *Stream) ResponseID() string { return s.responseID }

// FinishReason returns the Chat finish_reason, empty before a successful
// terminal event.
func (s *Stream) FinishReason() string { return s.finish }

// Usage returns the upstream usage from the terminal event, or nil.
func (s *Stream) Usage() *Usage { return s.usage }

// keepCapture adds n bytes to the capture counter *used and reports
// whether they stay within opts.CaptureLimit and opts.CaptureGrow accepts
// them. The first time they do not, every copy kept so far is dropped
// too: the capture is incomplete and only CaptureExceeded is left of it.
func (s *Stream) keepCapture(used *int64, n int64) bool {
	if s.captureOver {
		return false
	}
	lim, grow := s.opts.CaptureLimit, s.opts.CaptureGrow
	if lim > 0 && *used+n > lim || grow != nil && !grow(n) {
		s.captureOver = true
		s.output = nil
		for _, it := range s.items {
			it.done = nil
		}
		return false
	}
	*used += n
	return true
}

// CaptureExceeded reports whether the original output grew past
// ChatOptions.CaptureLimit or ChatOptions.CaptureGrow refused it, so that
// Output and DoneItems are incomplete.
func (s *Stream) CaptureExceeded() bool { return s.captureOver }

// Output returns the final output items: the terminal event's output when
// it carried one (even empty), else the output_item.done items ordered by
// output_index.
func (s *Stream) Output() []json.RawMessage {
	if s.haveOutput {
		return s.output
	}
	done := make([]*itemState, 0, len(s.items))
	for _, it := range s.items {
		if it.done != nil {
			done = append(done, it)
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].outputIndex < done[j].outputIndex })
	out := make([]json.RawMessage, len(done))
	for i, it := range done {
		out[i] = it.done
	}
	return out
}

// Status returns the terminal response's status (completed, incomplete,
// failed), empty before a terminal response event.
func (s *Stream) Status() string { return s.status }

// Snapshot returns the model named by the terminal response (the model
// snapshot that produced the output), empty when unknown.
func (s *Stream) Snapshot() string { return s.snapshot }

// DoneItems returns the output_item.done copies indexed by output_index
// (nil where no done event arrived for an index). Indexes beyond the
// number of items seen are dropped, so a hostile index cannot make it
// allocate.
func (s *Stream) DoneItems() []json.RawMessage {
	limit := len(s.items) + len(s.output)
	n := 0
	for _, it := range s.items {
		if it.done != nil && it.outputIndex < limit && it.outputIndex+1 > n {
			n = it.outputIndex + 1
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]json.RawMessage, n)
	for _, it := range s.items {
		if it.done != nil && it.outputIndex >= 0 && it.outputIndex < n {
			out[it.outputIndex] = it.done
		}
	}
	return out
}

// Sent returns what the client has received so far.
func (s *Stream) Sent() Sent {
	out := Sent{Content: string(s.content), Refusal: string(s.refusal)}
	for _, it := range s.calls {
		out.ToolCalls = append(out.ToolCalls, ToolCall{
			ID: it.callID, Name: it.name, Arguments: string(it.args), Custom: it.typ == "custom_tool_call",
		})
	}
	return out
}
