package reasoningcache

import (
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
