package fakeupstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// event is one SSE event before numbering. raw, when set, is written as the
// data line verbatim (the malformed scenario).
type event struct {
	typ    string
	fields map[string]any
	raw    string
}

// events returns the full event sequence of a turn (WIRE §5.2), ending in
// its terminal event.
func (t *turn) events() []event {
	evs := []event{
		{typ: "response.created", fields: map[string]any{"response": t.response("in_progress")}},
		{typ: "response.in_progress", fields: map[string]any{"response": t.response("in_progress")}},
	}
	for oi, it := range t.items {
		evs = append(evs, event{typ: "response.output_item.added",
			fields: map[string]any{"output_index": oi, "item": it.json(stageAdded)}})
		evs = append(evs, itemEvents(oi, it)...)
		evs = append(evs, event{typ: "response.output_item.done",
			fields: map[string]any{"output_index": oi, "item": it.json(stageDone)}})
	}
	switch t.status {
	case "incomplete":
		evs = append(evs, event{typ: "response.incomplete", fields: map[string]any{"response": t.response("incomplete")}})
	default:
		evs = append(evs, event{typ: "response.completed", fields: map[string]any{"response": t.response("completed")}})
	}
	return evs
}

// itemEvents are the events between output_item.added and .done of an item.
func itemEvents(oi int, it *outItem) []event {
	at := func(extra map[string]any) map[string]any {
		m := map[string]any{"item_id": it.ID, "output_index": oi}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	var evs []event
	add := func(typ string, extra map[string]any) { evs = append(evs, event{typ: typ, fields: at(extra)}) }
	switch it.Type {
	case "reasoning":
		if it.Summary == "" {
			return nil
		}
		add("response.reasoning_summary_part.added", map[string]any{"summary_index": 0,
			"part": map[string]any{"type": "summary_text", "text": ""}})
		for _, d := range split(it.Summary, 2) {
			add("response.reasoning_summary_text.delta", map[string]any{"summary_index": 0, "delta": d})
		}
		add("response.reasoning_summary_text.done", map[string]any{"summary_index": 0, "text": it.Summary})
		add("response.reasoning_summary_part.done", map[string]any{"summary_index": 0,
			"part": map[string]any{"type": "summary_text", "text": it.Summary}})
	case "message":
		add("response.content_part.added", map[string]any{"content_index": 0, "part": it.part("")})
		if it.PartType == "refusal" {
			for _, d := range split(it.Text, 3) {
				add("response.refusal.delta", map[string]any{"content_index": 0, "delta": d})
			}
			add("response.refusal.done", map[string]any{"content_index": 0, "refusal": it.Text})
		} else {
			for _, d := range split(it.Text, 4) {
				add("response.output_text.delta", map[string]any{"content_index": 0, "delta": d, "logprobs": []any{}})
			}
			add("response.output_text.done", map[string]any{"content_index": 0, "text": it.Text, "logprobs": []any{}})
		}
		add("response.content_part.done", map[string]any{"content_index": 0, "part": it.part(it.Text)})
	case "function_call":
		for _, d := range split(it.Text, 3) {
			add("response.function_call_arguments.delta", map[string]any{"delta": d})
		}
		add("response.function_call_arguments.done", map[string]any{"arguments": it.Text})
	case "custom_tool_call":
		for _, d := range split(it.Text, 3) {
			add("response.custom_tool_call_input.delta", map[string]any{"delta": d})
		}
		add("response.custom_tool_call_input.done", map[string]any{"input": it.Text})
	}
	return evs
}

// streamEvents applies the failure scenarios to the full sequence: they keep
// everything up to the second text delta and then fail their own way.
func (t *turn) streamEvents() []event {
	evs := t.events()
	switch t.sc.Kind {
	case KindFailed, KindErrorFlat, KindErrorNested, KindCut, KindMalformed:
	default:
		return evs
	}
	cut, deltas := len(evs)-1, 0
	for i, e := range evs {
		if e.typ == "response.output_text.delta" {
			if deltas++; deltas == 2 {
				cut = i + 1
				break
			}
		}
	}
	evs = evs[:cut]
	code, msg := t.failure()
	switch t.sc.Kind {
	case KindFailed:
		evs = append(evs, event{typ: "response.failed", fields: map[string]any{"response": t.response("failed")}})
	case KindErrorFlat:
		evs = append(evs, event{typ: "error", fields: map[string]any{"code": code, "message": msg, "param": nil}})
	case KindErrorNested:
		evs = append(evs, event{typ: "error", fields: map[string]any{"error": map[string]any{
			"type": "server_error", "code": code, "message": msg, "param": nil}}})
	case KindMalformed:
		evs = append(evs, event{typ: "response.output_text.delta", raw: `{"type":"response.output_text.delta","sequence_number":` + strconv.Itoa(cut) + `,"delta":`})
	}
	return evs
}

// encodeEvent renders an event's data JSON with type and sequence_number first.
func encodeEvent(e event, seq int) []byte {
	if e.raw != "" {
		return []byte(e.raw)
	}
	typ, _ := json.Marshal(e.typ)
	rest, err := json.Marshal(e.fields)
	if err != nil {
		rest = []byte("{}")
	}
	var b bytes.Buffer
	b.WriteString(`{"type":`)
	b.Write(typ)
	b.WriteString(`,"sequence_number":`)
	b.WriteString(strconv.Itoa(seq))
	if len(rest) > 2 {
		b.WriteByte(',')
		b.Write(rest[1:])
	} else {
		b.WriteByte('}')
	}
	return b.Bytes()
}

// serve writes the turn's answer.
func (t *turn) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case t.sc.Invalid != "":
		invalidRequest("", "fake_invalid_scenario", t.sc.Invalid).write(w)
	case t.sc.Kind == KindHTTPError:
		t.httpError().write(w)
	case t.p.stream:
		t.serveStream(w, r.Context())
	default:
		t.serveJSON(w)
	}
}

// serveStream writes the SSE stream, flushing after every event and pausing
// between events.
func (t *turn) serveStream(w http.ResponseWriter, ctx context.Context) {
	delay := t.sc.Delay
	if delay == 0 {
		delay = t.srv.opts.Delay
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	for seq, e := range t.streamEvents() {
		if seq > 0 && delay > 0 && !sleep(ctx, delay) {
			return
		}
		var b bytes.Buffer
		b.WriteString("event: ")
		b.WriteString(e.typ)
		b.WriteString("\ndata: ")
		b.Write(encodeEvent(e, seq))
		b.WriteString("\n\n")
		if _, err := w.Write(b.Bytes()); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if t.sc.Kind == KindCut && t.sc.Abort {
		// Hijack flushes what was written, then closing the raw
		// connection omits the terminating chunk.
		if conn, _, err := rc.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}

// serveJSON writes the stream:false answer.
func (t *turn) serveJSON(w http.ResponseWriter) {
	var doc map[string]any
	switch t.sc.Kind {
	case KindErrorFlat, KindErrorNested:
		code, msg := t.failure()
		(&apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: code, Message: msg}).write(w)
		return
	case KindFailed:
		doc = t.response("failed")
	default:
		doc = t.response(t.status)
	}
	body, err := json.Marshal(doc)
	if err != nil {
		(&apiError{Status: http.StatusInternalServerError, Type: "server_error", Message: "fakeupstream: " + err.Error()}).write(w)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	switch t.sc.Kind {
	case KindCut:
		// Announce the full length, send half: the client sees the
		// connection end early (unexpected EOF).
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(body[:len(body)/2])
		return
	case KindMalformed:
		body = body[:len(body)/2]
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// sleep waits d or until ctx ends; it reports whether the full pause elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
