package translate

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// slowValid is the reference validJSON must agree with.
func slowValid(b []byte) bool { return json.Valid(b) && utf8.Valid(b) }

// validCases are edge cases of the JSON grammar and of UTF-8.
var validCases = []string{
	``, ` `, `{}`, `[]`, ` {} `, `{`, `}`, `[`, `]`, `{]`, `[}`, `[1,]`, `{"a":1,}`, `{"a"}`, `{"a":}`,
	`{a:1}`, `{"a" : 1 , "b" : [ ] }`, `"x"`, `"x`, `"\"`, `"\\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`,
	`"\x"`, `"\/"`, "\"\t\"", "\"\x7f\"", "\"\xc3\xa9\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"",
	"\"\xef\xbf\xbd\"", `0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e5`, `1E+5`, `1e`, `1e+`, `-1.5e-3`, `+1`,
	`true`, `tru`, `truex`, `false`, `null`, `nul`, `[true,false,null]`, `1 2`, `{"a":1}x`, "\xef\xbb\xbf{}",
	`"abcdefgh"`, `"abcdefghijklmnop"`, `"abcdefg\"ijklmnop"`, "\"abcdefghijk\x01mnop\"", `[1,[2,[3]],{"a":{"b":[]}}]`,
	"{\"k\xff\":1}", `{"a":1 "b":2}`, `[1 2]`, `{"a":1,"a":2}`, "\"abcdefgh\xe2\x82\xac abcdefgh\"",
}

func TestValidJSONMatchesReference(t *testing.T) {
	cases := append([]string(nil), validCases...)
	cases = append(cases,
		strings.Repeat("[", maxDepth)+strings.Repeat("]", maxDepth),
		strings.Repeat("[", maxDepth+1)+strings.Repeat("]", maxDepth+1),
		strings.Repeat(`{"a":`, maxDepth)+"1"+strings.Repeat("}", maxDepth),
		strings.Repeat(`{"a":`, maxDepth+1)+"1"+strings.Repeat("}", maxDepth+1),
		string(cursorBody(20<<10)),
	)
	for _, c := range cases {
		if got, want := validJSON([]byte(c)), slowValid([]byte(c)); got != want {
			t.Errorf("validJSON(%.60q) = %v, want %v", c, got, want)
		}
	}
}

// TestValidJSONEveryPrefix checks every prefix and every one-byte change
// of a realistic body: each must agree with the reference.
func TestValidJSONEveryPrefix(t *testing.T) {
	body := cursorBody(4 << 10)
	for n := range len(body) + 1 {
		if got, want := validJSON(body[:n]), slowValid(body[:n]); got != want {
			t.Fatalf("prefix %d: %v, want %v", n, got, want)
		}
	}
	mut := append([]byte(nil), body...)
	for i := range mut {
		for _, c := range []byte{'"', '\\', '}', 0x01, 0xff, 'u', ','} {
			old := mut[i]
			mut[i] = c
			if got, want := validJSON(mut), slowValid(mut); got != want {
				t.Fatalf("byte %d set to %q: %v, want %v", i, c, got, want)
			}
			mut[i] = old
		}
	}
}

func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		f.Add([]byte(c))
	}
	f.Add(cursorBody(2 << 10))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), slowValid(b); got != want {
			t.Fatalf("validJSON = %v, reference %v", got, want)
		}
	})
}

// BenchmarkValidJSON compares validJSON with the reference it replaces.
func BenchmarkValidJSON(b *testing.B) {
	for _, hs := range historySizes {
		body := cursorBody(hs.size)
		b.Run("fast/"+hs.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				validJSON(body)
			}
		})
		b.Run("reference/"+hs.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				slowValid(body)
			}
		})
	}
}

// TestScanJSONSplitsLikeMembers: the members scanJSON reports for a valid
// object are the ones members finds.
func TestScanJSONSplitsLikeMembers(t *testing.T) {
	for _, c := range append(validCases, string(cursorBody(8<<10)), `{"a":{"b":[1,{}]},"c" : "d" ,"e":[],"f":{},"a":null}`, `{"k\u0065y":1}`) {
		b := []byte(c)
		var got, want []string
		ok := scanJSON(b, func(k, v []byte) {
			s, _ := unquote(k)
			got = append(got, s+"="+string(v))
		})
		if ok != slowValid(b) {
			t.Fatalf("scanJSON(%.60q) = %v", c, ok)
		}
		if !ok || !isObject(b[skipWS(b, 0):]) {
			continue
		}
		members(b, func(k []byte, v json.RawMessage) { want = append(want, string(k)+"="+string(v)) })
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("scanJSON(%.60q) members\n%q\nwant\n%q", c, got, want)
		}
	}
}
