package translate

// The output items a Stream tracks: finding them by index or id, their
// announcement and completion, and the terminal response.

import (
	"encoding/json"
	"fmt"
	"strings"
)

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

// itemAdded registers an output item; a tool call gets its Chat index and
// its header chunk (id, type, name) now.
func (s *Stream) itemAdded(dst []byte, ev *streamEvent) ([]byte, error) {
	var oi outputItem
	if err := decodeItem(ev.Item, &oi, true); err != nil {
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
	if err := decodeItem(ev.Item, &oi, true); err != nil {
		return dst, fmt.Errorf("translate: malformed output_item.done: %w", err)
	}
	if len(ev.ItemID) == 0 {
		ev.ItemID = []byte(oi.ID)
	}
	it := s.item(ev, oi.Type)
	if s.keepRecord(&s.doneBytes, int64(len(ev.Item))) {
		it.done = append(json.RawMessage(nil), ev.Item...)
	}
	return s.reconcile(dst, it, &oi)
}

// completed handles response.completed and response.incomplete.
func (s *Stream) completed(dst []byte, ev *streamEvent) ([]byte, error) {
	var r upstreamResponse
	if len(ev.Response) > 0 {
		if err := decodeResponse(ev.Response, &r, true); err != nil {
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
		if s.keepRecord(&kept, n) {
			s.output = r.Output
		}
		for i, raw := range r.Output {
			var oi outputItem
			if err := decodeItem(raw, &oi, true); err != nil {
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
