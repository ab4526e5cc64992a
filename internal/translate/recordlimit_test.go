package translate

import (
	"bytes"
	"testing"
)

// TestStreamRecordLimit: the copies kept for the reasoning cache stop at
// RecordLimit while they accumulate (each kind on its own), without
// changing a byte of what the client receives.
func TestStreamRecordLimit(t *testing.T) {
	events, total, _ := recordStream()

	free, s := runStream(t, streamOpts, events)
	if s.RecordExceeded() || len(s.Output()) != 2 || len(s.DoneItems()) != 2 {
		t.Fatalf("unlimited: exceeded %v, %d output, %d done", s.RecordExceeded(), len(s.Output()), len(s.DoneItems()))
	}
	opts := streamOpts
	opts.RecordLimit = total
	_, s = runStream(t, opts, events)
	if s.RecordExceeded() || len(s.Output()) != 2 || len(s.DoneItems()) != 2 {
		t.Fatalf("at the limit: exceeded %v, %d output, %d done", s.RecordExceeded(), len(s.Output()), len(s.DoneItems()))
	}
	opts.RecordLimit = total - 1
	out, s := runStream(t, opts, events)
	if !s.RecordExceeded() || s.Output() != nil || s.DoneItems() != nil {
		t.Fatalf("over the limit: exceeded %v, output %s, done %s", s.RecordExceeded(), s.Output(), s.DoneItems())
	}
	if !bytes.Equal(out, free) {
		t.Fatalf("the recording limit changed the client's stream:\n%s\nwant\n%s", out, free)
	}
}

// recordStream is a stream of two output items with their
// output_item.done copies; total is the bytes of one copy of each, first
// the size of the first item.
func recordStream() (events []sseEvent, total, first int64) {
	item0 := `{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"gA0"}`
	item1 := `{"id":"fc_1","type":"function_call","call_id":"c","name":"f","arguments":"{}"}`
	events = []sseEvent{ev(evCreated),
		ev(`{"type":"response.output_item.done","output_index":0,"item":` + item0 + `}`),
		ev(`{"type":"response.output_item.done","output_index":1,"item":` + item1 + `}`),
		ev(`{"type":"response.completed","response":{"status":"completed","output":[` + item0 + `,` + item1 + `]}}`)}
	return events, int64(len(item0) + len(item1)), int64(len(item0))
}
