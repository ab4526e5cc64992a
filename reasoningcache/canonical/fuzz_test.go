package canonical

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonicalize: no panic; output is valid JSON, a fixed point, and
// agrees with the reference serializer whenever both accept the input.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range []string{
		`{"b":[1,2.50,"\u00e9"],"a":null}`, `"\ud83d\ude00\/\u001F"`, `[1e400]`, `{"a":1,"a":2}`,
		`-0`, `{"\ufb33":1,"\ud83d\ude00":2}`, "\"\xff\"", `[[[[[[]]]]]]`, ` 12 `, `{"a":"\u0000"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstReference(t, in)
		_, err1 := Canonicalize(in, Limits{})
		_, err2 := Canonicalize(in, Limits{})
		if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
			t.Fatalf("decision changed: %v then %v", err1, err2)
		}
	})
}

// FuzzHistory: envelopes separated by 0x1e. No panic, memory bounded by
// the scratch limit, decisions stable, the prefix property holds and
// Extend agrees with re-hashing.
func FuzzHistory(f *testing.F) {
	join := func(envs []json.RawMessage) []byte { return bytes.Join(bytesOf(envs), []byte{0x1e}) }
	f.Add(false, join(chatHistory))
	f.Add(true, join(responsesHistory))
	f.Add(true, []byte(`"hi"`+"\x1e"+`{"role":"assistant","content":[{"type":"output_text","text":"a"}]}`))
	f.Add(false, []byte(`{"role":"assistant","content":null,"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`))
	f.Fuzz(func(t *testing.T, responses bool, data []byte) {
		shape := ShapeChat
		if responses {
			shape = ShapeResponses
		}
		var envs []json.RawMessage
		if len(data) > 0 {
			for _, e := range bytes.Split(data, []byte{0x1e}) {
				envs = append(envs, e)
			}
		}
		lim := Limits{MaxMessages: 64, MaxNodes: 4096, MaxDepth: 16, MaxScratch: 1 << 16, MaxBytes: 1 << 20}
		scope := testScope(shape)
		d1, err := HistoryDigests(testSecret, scope, envs, lim)
		if err != nil {
			t.Fatal(err)
		}
		d2, _ := HistoryDigests(testSecret, scope, envs, lim)
		if (d1.Refusal == nil) != (d2.Refusal == nil) || d1.Refusal != nil && *d1.Refusal != *d2.Refusal || d1.Final() != d2.Final() {
			t.Fatalf("decision changed: %v / %v", d1.Refusal, d2.Refusal)
		}
		eff, _ := lim.Effective()
		for _, e := range envs {
			c := getCanon(eff, eff.MaxNodes)
			c.envelope(shape, e)
			if used := int64(len(c.a.nodes))*ScratchPerNode + int64(len(c.a.scratch)); used > eff.MaxScratch+1024 {
				t.Fatalf("envelope used %d scratch bytes, limit %d", used, eff.MaxScratch)
			}
			putCanon(c)
		}
		if d1.Refusal != nil || len(envs) == 0 {
			return
		}
		n := len(envs)
		prefix, err := HistoryDigests(testSecret, scope, envs[:n-1], lim)
		if err != nil || prefix.Refusal != nil {
			t.Fatalf("prefix of an accepted history refused: %v %v", err, prefix.Refusal)
		}
		if prefix.Final() != d1.Boundaries[n-1] {
			t.Fatal("prefix property violated")
		}
		last := d1.Kinds[n-1]
		if !last.Assistant() {
			return
		}
		b, err := prefix.Extend(envs[n-1])
		if err != nil {
			t.Fatalf("Extend: %v", err)
		}
		if b.EndDigest != d1.Final() {
			t.Fatal("Extend end digest differs from the history")
		}
	})
}

func bytesOf(envs []json.RawMessage) [][]byte {
	out := make([][]byte, len(envs))
	for i, e := range envs {
		out[i] = e
	}
	return out
}
