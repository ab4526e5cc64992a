package translate

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode/utf8"

	"github.com/reasoning-relay/caddy-reasoning-relay/internal/jsonscan"
)

func TestMembersMatchesEncodingJSON(t *testing.T) {
	objects := []string{
		`{}`,
		` { "a" : 1 , "b":"x" } `,
		`{"s":"quote \" and \\","t":"ends with backslash \\\\","u":"[{\"}"}`,
		`{"nested":{"a":[1,{"b":"}"}],"c":null},"arr":[[],[[]],{}],"num":-1.5e+3,"t":true,"f":false}`,
		`{"k\u0065y":1,"dup":1,"dup":2}`,
		`{"é":"ü\u2028","":""}`,
	}
	for _, o := range objects {
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal([]byte(o), &want); err != nil {
			t.Fatal(err)
		}
		got := map[string]json.RawMessage{}
		members([]byte(o), func(k []byte, v json.RawMessage) { got[string(k)] = v })
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s\n got %q\nwant %q", o, got, want)
		}
	}
	arrays := []string{`[]`, `[ 1 , "a,b" , {"x":[1,2]} , [] , null ]`, `["\\\"",[["]"]]]`}
	for _, a := range arrays {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(a), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := jsonscan.SplitArray(json.RawMessage(a[jsonscan.SkipSpace([]byte(a), 0):]))
		if !ok || len(got) != len(want) {
			t.Fatalf("%s: got %q", a, got)
		}
		for i := range want {
			if string(got[i]) != string(want[i]) {
				t.Errorf("%s[%d] = %s, want %s", a, i, got[i], want[i])
			}
		}
	}
}

func TestRawHelpersOnGarbage(t *testing.T) {
	for _, b := range []string{``, `{`, `{"a`, `{"a":`, `{"a" 1}`, `[1,`, `["x`, `{1:2}`, `[`} {
		members([]byte(b), func([]byte, json.RawMessage) {})
		jsonscan.SplitArray([]byte(b))
	}
	if typeName(json.RawMessage(`"t\u0065xt"`)) != "text" || typeName(json.RawMessage(`5`)) != "" {
		t.Error("typeName")
	}
}

// FuzzMembers checks members against encoding/json on the bodies
// Translate accepts (valid JSON in valid UTF-8): collecting the members
// into a map gives the same keys and raw values as unmarshalling into
// map[string]json.RawMessage, duplicates and escaped keys included.
// members is kept over the decoder because it neither re-validates nor
// copies the values (TestLargePlainMessageIsNotCopied).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1,"a":2}`, `{"k\u0065y":[1,{"}":"\""}]}`, `{"\ud800":1,"\ufffd":2}`, ` {"é" : "ü" } `} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		if !json.Valid(b) || !utf8.Valid(b) || !isObject(b[jsonscan.SkipSpace(b, 0):]) {
			return
		}
		want := map[string]json.RawMessage{}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		got := map[string]json.RawMessage{}
		members(b, func(k []byte, v json.RawMessage) { got[string(k)] = v })
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q\n got %q\nwant %q", s, got, want)
		}
	})
}
