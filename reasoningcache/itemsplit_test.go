package reasoningcache

import (
	"reflect"
	"testing"
)

// TestItemSplitsFollowTheBytes: a kept split answers only for the very
// buffer it was computed from; a payload id whose output is read again
// into another buffer, or whose id now names other bytes (deleted and
// reused), is split again.
func TestItemSplitsFollowTheBytes(t *testing.T) {
	var c itemSplits
	check := func(id int64, out []byte) {
		t.Helper()
		items, calls, ok := c.split(id, out)
		wi, wc, wok := payloadItems(out)
		if ok != wok || !reflect.DeepEqual(items, wi) || !reflect.DeepEqual(calls, wc) {
			t.Fatalf("split %s: %q %q %v, payloadItems %q %q %v", out, items, calls, ok, wi, wc, wok)
		}
	}
	a := []byte(`[{"type":"reasoning","id":"rs_1"},{"type":"function_call","call_id":"call_a","name":"f","arguments":"{}"}]`)
	check(1, a)
	check(1, a) // kept
	if e := c.m[1]; !sameBytes(e.output, a) {
		t.Fatal("the split was not kept")
	}
	// the same id, other bytes: a reused id
	check(1, []byte(`[{"type":"function_call","call_id":"call_b","name":"g","arguments":"{}"}]`))
	// the same bytes in another buffer
	check(1, append([]byte(nil), a...))
	// not replayable
	check(2, []byte(`[{"type":"message","role":"user","content":[]}]`))
	check(3, []byte(`[]`))
	check(3, []byte(`[{"type":"reasoning"}]`))
}
