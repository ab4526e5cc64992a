package transport

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *SSEReader) ([]Event, error) {
	t.Helper()
	var evs []Event
	for {
		ev, err := r.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, Event{Name: ev.Name, Data: append([]byte(nil), ev.Data...)})
	}
}

func TestSSEReader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Event
		err  error
	}{
		{"openai framing", "event: response.created\ndata: {\"a\":1}\n\nevent: response.completed\ndata: {}\n\n",
			[]Event{{"response.created", []byte(`{"a":1}`)}, {"response.completed", []byte(`{}`)}}, io.EOF},
		{"crlf", "event: x\r\ndata: 1\r\n\r\n", []Event{{"x", []byte("1")}}, io.EOF},
		{"no space after colon", "data:1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"only one leading space stripped", "data:  1\n\n", []Event{{"", []byte(" 1")}}, io.EOF},
		{"multi-line data", "data: a\ndata: b\n\n", []Event{{"", []byte("a\nb")}}, io.EOF},
		{"comments and keepalives", ": keepalive\n\n: x\ndata: 1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"name does not leak to next event", "event: a\ndata: 1\n\ndata: 2\n\n",
			[]Event{{"a", []byte("1")}, {"", []byte("2")}}, io.EOF},
		{"event without data is not dispatched", "event: a\n\ndata: 2\n\n", []Event{{"", []byte("2")}}, io.EOF},
		{"unknown fields ignored", "id: 7\nretry: 10\nfoo\ndata: 1\n\n", []Event{{"", []byte("1")}}, io.EOF},
		{"unterminated event", "data: 1\n\ndata: 2\n", []Event{{"", []byte("1")}}, io.ErrUnexpectedEOF},
		{"unterminated line", "data: 1\n\ndata: 2", []Event{{"", []byte("1")}}, io.ErrUnexpectedEOF},
		{"empty", "", nil, io.EOF},
		{"nul byte", "data: \x00\n\n", nil, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tt.in), iotest.OneByteReader(strings.NewReader(tt.in))} {
				got, err := readAll(t, NewSSEReader(r, 1024))
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				if len(got) != len(tt.want) {
					t.Fatalf("got %d events %q, want %d", len(got), got, len(tt.want))
				}
				for i := range got {
					if got[i].Name != tt.want[i].Name || !bytes.Equal(got[i].Data, tt.want[i].Data) {
						t.Errorf("event %d = %q/%q, want %q/%q", i, got[i].Name, got[i].Data, tt.want[i].Name, tt.want[i].Data)
					}
				}
			}
		})
	}
}

func TestSSEReaderEventCap(t *testing.T) {
	big := strings.Repeat("x", 100_000)
	// a single long line larger than the bufio buffer and the cap
	_, err := readAll(t, NewSSEReader(strings.NewReader("data: "+big+"\n\n"), 50_000))
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	// many small lines adding up past the cap
	in := strings.Repeat("data: "+strings.Repeat("y", 1000)+"\n", 100) + "\n"
	_, err = readAll(t, NewSSEReader(strings.NewReader(in), 50_000))
	if !errors.Is(err, ErrEventTooLarge) {
		t.Fatalf("err = %v, want ErrEventTooLarge", err)
	}
	// an event just under the cap passes, and long lines larger than the
	// internal buffer are reassembled
	evs, err := readAll(t, NewSSEReader(strings.NewReader("data: "+big+"\n\n"), 200_000))
	if !errors.Is(err, io.EOF) || len(evs) != 1 || string(evs[0].Data) != big {
		t.Fatalf("got %d events, err %v", len(evs), err)
	}
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("event: response.created\ndata: {}\n\n"), 64)
	f.Add([]byte("data: a\r\ndata: b\r\n\r\n: c\n"), 8)
	f.Add([]byte("data:\n\n\n\ndata"), 1)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max <= 0 || max > 1<<16 {
			max = 1 << 16
		}
		r := NewSSEReader(bytes.NewReader(in), max)
		total := 0
		for i := 0; ; i++ {
			ev, err := r.Next()
			if err != nil {
				break
			}
			if len(ev.Data) > max {
				t.Fatalf("event of %d bytes passed a cap of %d", len(ev.Data), max)
			}
			total += len(ev.Data)
			if i > len(in) {
				t.Fatalf("more events than input bytes")
			}
		}
		if total > len(in) {
			t.Fatalf("produced %d data bytes from %d input bytes", total, len(in))
		}
	})
}

func BenchmarkSSEReader(b *testing.B) {
	ev := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":10,\"item_id\":\"msg_A1\",\"output_index\":1,\"content_index\":0,\"delta\":\"hello world\",\"logprobs\":[]}\n\n"
	in := []byte(strings.Repeat(ev, 1000))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(in), 1<<20)
		for {
			if _, err := r.Next(); err != nil {
				break
			}
		}
	}
}
