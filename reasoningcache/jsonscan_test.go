package reasoningcache

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestHeadOf(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want itemHead
		ok   bool
	}{
		{`{"type":"function_call","call_id":"call_1","arguments":"{\"a\":[1,{\"b\":\"]}\"}]}","name":"f"}`, itemHead{Type: "function_call", CallID: "call_1"}, true},
		{` { "role" : "assistant" , "type" : "message", "content":[{"type":"output_text"}] } `, itemHead{Type: "message", Role: "assistant"}, true},
		{`{"type":"t\u0079pe","call_id":null}`, itemHead{Type: "type"}, true},
		{`{"encrypted_content":"x\"y","type":"reasoning"}`, itemHead{Type: "reasoning"}, true},
		{`{}`, itemHead{}, true},
		{`[]`, itemHead{}, false},
		{`{"type":"a",}`, itemHead{}, false},
	} {
		got, ok := headOf([]byte(tc.in))
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("headOf(%s) = %+v, %v; want %+v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func FuzzSplitArray(f *testing.F) {
	for _, s := range []string{`[]`, `[1, "a", {"b":[2,"]"]}, null]`, ` [ {"x":"\"]"} ] `, `[1,]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !json.Valid([]byte(s)) || bytes.Equal(bytes.TrimSpace([]byte(s)), []byte("null")) {
			return // the decoder accepts null as an empty slice; the scanner wants an array
		}
		var want []json.RawMessage
		werr := json.Unmarshal([]byte(s), &want)
		got, ok := splitArray([]byte(s))
		if (werr == nil) != ok {
			t.Fatalf("%q: split ok %v, decoder error %v", s, ok, werr)
		}
		if !ok {
			return
		}
		if len(got) != len(want) {
			t.Fatalf("%q: %d elements, want %d", s, len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: element %d %q, want %q", s, i, got[i], want[i])
			}
		}
	})
}
