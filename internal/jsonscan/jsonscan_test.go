package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
)

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
		got, ok := SplitArray([]byte(s))
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
