package canonical

import (
	"bytes"
	"encoding/json"
	"testing"
)

// checkVerbatim canonicalizes one envelope and, when the pass found it
// verbatim (and so frames the raw bytes without walking the nodes), checks
// that the walk would have written exactly those bytes. It reports whether
// the envelope was verbatim.
func checkVerbatim(t testing.TB, shape Shape, env []byte) bool {
	t.Helper()
	lim, _ := Limits{}.Effective()
	c := getCanon(lim, lim.MaxNodes)
	defer putCanon(c)
	root, _, r := c.envelope(shape, env)
	if r != "" || !c.a.verbatim {
		return false
	}
	if got := c.a.measure(root); got != int64(len(env)) {
		t.Fatalf("%s %q: verbatim, but canonical size %d", shape, env, got)
	}
	if got := c.bytes(root); !bytes.Equal(got, env) {
		t.Fatalf("%s %q: verbatim, but canonical form %q", shape, env, got)
	}
	return true
}

func TestVerbatimEnvelopes(t *testing.T) {
	for _, shape := range []Shape{ShapeChat, ShapeResponses} {
		n, fast := 0, 0
		envs := append(cursorHistory(shape, 64<<10), chatHistory...)
		envs = append(envs, responsesHistory...)
		for _, e := range envs {
			n++
			if checkVerbatim(t, shape, e) {
				fast++
			}
		}
		t.Logf("%s: %d of %d envelopes verbatim", shape, fast, n)
		if fast == 0 {
			t.Errorf("%s: no envelope was recognized as verbatim", shape)
		}
	}
	// Each of these differs from its canonical form.
	for _, e := range []string{
		` {"content":"a","role":"user"}`, `{"content":"a","role":"user"} `, `{"content": "a","role":"user"}`,
		`{"role":"user","content":"a"}`, `{"content":"\u0061","role":"user"}`, `{"content":"a\/","role":"user"}`,
		`{"content":1.0,"role":"user"}`, `{"content":"a","role":"user","x":[1E3]}`, `{"content":"a","role":"user","x":{"b":1,"a":2}}`,
		`{"content":null,"role":"assistant"}`, `{"role":"assistant"}`, `{"content":"a","role":"assistant","tool_calls":[]}`,
		`{"content":[{"text":"a","type":"text"}],"role":"assistant"}`,
	} {
		if checkVerbatim(t, ShapeChat, []byte(e)) {
			t.Errorf("%s: reported verbatim", e)
		}
	}
	for _, e := range []string{`"hi"`, `{"content":"a","role":"user"}`, `{"content":"a","id":"x","role":"assistant","type":"message"}`} {
		if checkVerbatim(t, ShapeResponses, []byte(e)) {
			t.Errorf("%s: reported verbatim (Responses)", e)
		}
	}
}

// FuzzVerbatim: whenever an envelope is framed as its raw bytes, those
// bytes are its canonical form.
func FuzzVerbatim(f *testing.F) {
	for _, e := range append(append([]json.RawMessage{}, chatHistory...), responsesHistory...) {
		f.Add(false, []byte(e))
		f.Add(true, []byte(e))
	}
	f.Add(false, []byte(`{"a":{"b":[1,2.5,"x\n"],"c":null},"role":"tool"}`))
	f.Fuzz(func(t *testing.T, responses bool, env []byte) {
		shape := ShapeChat
		if responses {
			shape = ShapeResponses
		}
		checkVerbatim(t, shape, env)
	})
}
