package translate

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

// sameDecode reports whether the fast answer decoders agree with
// json.Unmarshal, the reference they replace, on raw: the same success or
// failure and the same values.
func sameDecode(t *testing.T, raw []byte) {
	t.Helper()
	for _, valid := range []bool{false, true} {
		if valid && !json.Valid(raw) {
			continue // valid promises json.Valid
		}
		check := func(name string, got, want any, gerr, werr error) {
			t.Helper()
			if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
				t.Fatalf("%s(%q): error %v, reference %v", name, raw, gerr, werr)
			}
			if gerr == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%s(%q):\n got %+v\nwant %+v", name, raw, got, want)
			}
		}
		var r, rr upstreamResponse
		check("decodeResponse", &r, &rr, decodeResponse(raw, &r, valid), json.Unmarshal(raw, &rr))
		var it, ri outputItem
		check("decodeItem", &it, &ri, decodeItem(raw, &it, valid), json.Unmarshal(raw, &ri))
		var p, rp outputPart
		check("decodePartDone", &p, &rp, decodePartDone(raw, &p, valid), json.Unmarshal(raw, &rp))
		var e, re upstreamError
		check("decodeError", &e, &re, decodeError(raw, &e, valid), json.Unmarshal(raw, &re))
	}
}

// answerSeeds are Responses objects, items, parts and errors, including
// the spellings encoding/json treats specially.
func answerSeeds() [][]byte {
	out := [][]byte{answerBody()}
	for _, e := range answerEvents() {
		out = append(out, []byte(e[1]))
		var ev struct{ Item, Response, Part json.RawMessage }
		_ = json.Unmarshal([]byte(e[1]), &ev)
		for _, v := range [][]byte{ev.Item, ev.Response, ev.Part} {
			if v != nil {
				out = append(out, v)
			}
		}
	}
	for _, s := range []string{
		`{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[]}`,
		`{"status":"incomplete","incomplete_details":{"reason":"a","Reason":"b","REASON":"c"}}`,
		`{"ID":"x","id":"y"}`, `{"id":"x","id":"y"}`, `{"ſtatus":"completed"}`, `{"usage":{"input_tokens":1},"usage":{"output_tokens":2}}`,
		`{"usage":{"input_tokens":1.5}}`, `{"usage":{"input_tokens":1e2}}`, `{"usage":{"input_tokens":99999999999999999999}}`,
		`{"usage":{"input_tokens_details":{"cache_write_tokens":null}}}`, `{"usage":{"input_tokens_details":{"cache_write_tokens":3}}}`,
		`{"created_at":1e400}`, `{"created_at":"1"}`, `{"output":null}`, `{"output":{}}`, `{"output":[1,"a",{"x":[]}]}`,
		`{"error":{"code":"rate_limit_exceeded","message":"m\u00e9"}}`, `{"error":"x"}`, `{"error":null}`,
		`{"type":"function_call","arguments":null,"input":"x"}`, `{"type":"message","content":[null,{"type":"output_text","text":"a"},{"type":"refusal","refusal":"r"}]}`,
		`{"content":[1]}`, `{"content":{}}`, `{"content":[],"content":[]}`, `null`, `[]`, `5`, `"s"`, ``, `{`, "{\"text\":\"\xff\"}",
		`{"text":"\ud800"}`, `{"type":"output_text","text":"a\nb"}`, ` {"id" : "x" } `, `{"status":true}`,
	} {
		out = append(out, []byte(s))
	}
	return out
}

// TestAnswerDecodeMatchesReference holds the answer decoders to
// json.Unmarshal on the seeds and on random mutations of them.
func TestAnswerDecodeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, seed := range answerSeeds() {
		sameDecode(t, seed)
		b := seed
		n := 300
		if len(seed) > 4<<10 {
			n = 30 // large seeds cost more per run than they add
		}
		for range n {
			b = mutate(r, b)
			sameDecode(t, b)
			if r.IntN(6) == 0 {
				b = seed
			}
		}
	}
}

func FuzzAnswerDecode(f *testing.F) {
	for _, s := range answerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameDecode(t, raw) })
}

// refUnquote is the string decoding unquote replaces.
func refUnquote(raw []byte) (string, bool) {
	if !isString(raw) {
		return "", false
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false
	}
	return s, true
}

var unquoteSeeds = []string{`""`, `"a"`, `"a\nb"`, `"\u00e9\u20ac"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`,
	`"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\/\b\f\r\t\\\""`, `"\x"`, `"\u12"`, `"a"b"`, "\"\x01\"", "\"\xff\xfe\"",
	"\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"", `"`, `x`, `"\"`, `"abc\u0000def"`, `"\U0041"`}

func TestUnquoteMatchesReference(t *testing.T) {
	for _, s := range unquoteSeeds {
		g, gok := unquote([]byte(s))
		w, wok := refUnquote([]byte(s))
		if g != w || gok != wok {
			t.Errorf("unquote(%q) = %q, %v; reference %q, %v", s, g, gok, w, wok)
		}
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range unquoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(bytes.TrimSpace(raw)) != len(raw) {
			return // unquote gets tokens, never surrounding whitespace
		}
		g, gok := unquote(raw)
		w, wok := refUnquote(raw)
		if g != w || gok != wok {
			t.Fatalf("unquote(%q) = %q, %v; reference %q, %v", raw, g, gok, w, wok)
		}
	})
}

// refDecodeEvent is decodeEvent as it was: json.Valid, then a member walk.
func refDecodeEvent(data []byte, ev *streamEvent) error {
	if !json.Valid(data) {
		var v any
		return json.Unmarshal(data, &v)
	}
	if !isObject(data[jsonscan.SkipSpace(data, 0):]) {
		return errNotObject
	}
	var err error
	members(data, func(k []byte, v json.RawMessage) {
		switch string(k) {
		case "type":
			ev.Type = eventType(v)
		case "output_index":
			if !isNull(v) {
				ev.HasIndex = true
				if ev.OutputIndex, err = parseIndex(v, err); err != nil {
					ev.HasIndex = false
				}
			}
		case "content_index":
			if !isNull(v) {
				ev.ContentIndex, err = parseIndex(v, err)
			}
		case "item_id":
			if isString(v) {
				ev.ItemID = v[1 : len(v)-1]
			}
		case "delta":
			ev.Delta = v
		case "text":
			ev.Text = v
		case "refusal":
			ev.Refusal = v
		case "arguments":
			ev.Arguments = v
		case "input":
			ev.Input = v
		case "part":
			ev.Part = v
		case "item":
			ev.Item = v
		case "response":
			ev.Response = v
		case "error":
			ev.Error = v
		case "code":
			ev.Code = v
		case "message":
			ev.Message = v
		case "param":
			ev.Param = v
		}
	})
	return err
}

// sameEvent checks decodeEvent against refDecodeEvent on data.
func sameEvent(t *testing.T, data []byte) {
	t.Helper()
	var got, want streamEvent
	gerr, werr := decodeEvent(data, &got), refDecodeEvent(data, &want)
	if (gerr == nil) != (werr == nil) || (gerr != nil && gerr.Error() != werr.Error()) {
		t.Fatalf("decodeEvent(%q): error %v, reference %v", data, gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decodeEvent(%q):\n got %+v\nwant %+v", data, got, want)
	}
}

func TestDecodeEventMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	seeds := answerSeeds()
	seeds = append(seeds, []byte(`{"type":"response.output_text.delta","output_index":1,"output_index":"x","content_index":2,"item_id":"m","delta":"\u00e9"}`),
		[]byte("{\"typ\\u0065\":\"error\",\"code\":\"c\",\"message\":\"\xff\"}"), []byte(` [1] `), []byte(`{"output_index":-1}`))
	for _, seed := range seeds {
		sameEvent(t, seed)
		b := seed
		for range 100 {
			b = mutate(r, b)
			sameEvent(t, b)
			if r.IntN(6) == 0 {
				b = seed
			}
		}
	}
}

func FuzzDecodeEvent(f *testing.F) {
	for _, s := range answerSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameEvent(t, data) })
}
