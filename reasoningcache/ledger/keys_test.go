package ledger

import (
	"encoding/json"
	"math"
	"testing"
)

// TestJSONKeysMatchMarshal holds the bulk reads' key encoding to
// json.Marshal, on the fast path (ids, hex digests) and off it.
func TestJSONKeysMatchMarshal(t *testing.T) {
	check := func(name string, keys any, got string, err error) {
		t.Helper()
		want, merr := json.Marshal(keys)
		if err != nil || merr != nil || got != string(want) {
			t.Fatalf("%s: jsonKeys %q (%v), json.Marshal %q (%v)", name, got, err, want, merr)
		}
	}
	for _, ids := range [][]int64{{}, {1}, {0, -5, math.MaxInt64, math.MinInt64, 42}} {
		got, err := jsonKeys("test", ids)
		check("ids", ids, got, err)
	}
	lists := [][]string{{}, {dig("a"), dig("b")}, {"", "A-z_09"}}
	for _, odd := range []string{`quote"`, `back\slash`, "new\nline", "<html>&", "é", "\u2028", "\x00", " ", "a.b"} {
		lists = append(lists, []string{odd}, []string{dig("a"), odd})
	}
	for _, keys := range lists {
		got, err := jsonKeys("test", keys)
		check("strings", keys, got, err)
	}
}
