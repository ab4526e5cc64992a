package reasoningcache

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// checkDoneCopiesSlow is checkDoneCopies without the equal-bytes fast
// path: every copy decoded and compared as a value.
func checkDoneCopiesSlow(terminal, done []json.RawMessage, items []outItem) string {
	if len(done) != len(terminal) {
		return "done_copy_mismatch"
	}
	for i := range terminal {
		if len(done[i]) == 0 {
			return "done_copy_missing"
		}
		var d outItem
		if json.Unmarshal(done[i], &d) != nil {
			return "done_copy_invalid"
		}
		t := items[i]
		if t.Type == "reasoning" || d.Type == "reasoning" {
			if t.Type != d.Type || t.ID == "" || t.ID != d.ID ||
				t.EncryptedContent == nil || d.EncryptedContent == nil ||
				*t.EncryptedContent == "" || *d.EncryptedContent == "" {
				return "done_copy_mismatch"
			}
			if !equalExcept(terminal[i], done[i], "encrypted_content") {
				return "done_copy_mismatch"
			}
			continue
		}
		if !equalExcept(terminal[i], done[i], "") {
			return "done_copy_mismatch"
		}
	}
	return ""
}

// TestDoneCopiesFastPath: the equal-bytes fast path decides exactly as
// the full comparison, on the edge cases and on random outputs whose
// done copies are the same bytes, respelled, or changed.
func TestDoneCopiesFastPath(t *testing.T) {
	items := []string{
		`{"type":"reasoning","id":"rs_1","encrypted_content":"gAAA","summary":[]}`,
		`{"type":"reasoning","id":"","encrypted_content":"gAAA"}`,
		`{"type":"reasoning","id":"rs_2","encrypted_content":""}`,
		`{"type":"reasoning","id":"rs_3"}`,
		`{"type":"reasoning","id":"rs_4","encrypted_content":null}`,
		`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"hi"}]}`,
		`{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"}`,
		`{}`,
		` {"type":"message"}`,
		`null`,
		` null `,
	}
	respell := func(s string) string { return " " + s + "\n" }
	change := func(s string) string {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil || m == nil {
			return `{"type":"other"}`
		}
		m["extra"] = 1
		b, _ := json.Marshal(m)
		return string(b)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 4000 {
		k := 1 + rng.IntN(3)
		var terminal, done []json.RawMessage
		var parsed []outItem
		ok := true
		for range k {
			s := items[rng.IntN(len(items))]
			var it outItem
			if json.Unmarshal([]byte(s), &it) != nil {
				ok = false
				break
			}
			d := s
			switch rng.IntN(4) {
			case 1:
				d = respell(s)
			case 2:
				d = change(s)
			}
			terminal, done, parsed = append(terminal, json.RawMessage(s)), append(done, json.RawMessage(d)), append(parsed, it)
		}
		if !ok {
			continue
		}
		got, want := checkDoneCopies(terminal, done, parsed), checkDoneCopiesSlow(terminal, done, parsed)
		if got != want {
			t.Fatalf("case %d: fast path %q, full comparison %q\nterminal %s\ndone %s", n, got, want, fmt.Sprint(terminal), fmt.Sprint(done))
		}
	}
}
