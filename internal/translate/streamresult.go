package translate

// What a Stream ends with and reports afterwards: the terminal frames, the
// upstream failure, usage, the original output for the reasoning cache and
// what the client received.

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/apierr"
)

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

// keepRecord adds n bytes to the recording counter *used and reports
// whether they stay within opts.RecordLimit and opts.RecordGrow accepts
// them. The first time they do not, every copy kept so far is dropped
// too: the recording is incomplete and only RecordExceeded is left of it.
func (s *Stream) keepRecord(used *int64, n int64) bool {
	if s.recordOver {
		return false
	}
	lim, grow := s.opts.RecordLimit, s.opts.RecordGrow
	if lim > 0 && *used+n > lim || grow != nil && !grow(n) {
		s.recordOver = true
		s.output = nil
		for _, it := range s.items {
			it.done = nil
		}
		return false
	}
	*used += n
	return true
}

// RecordExceeded reports whether the original output grew past
// ChatOptions.RecordLimit or ChatOptions.RecordGrow refused it, so that
// Output and DoneItems are incomplete.
func (s *Stream) RecordExceeded() bool { return s.recordOver }

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
