package canonical

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

func canonText(t testing.TB, in string) string {
	t.Helper()
	out, err := Canonicalize(json.RawMessage(in), Limits{})
	if err != nil {
		t.Fatalf("Canonicalize(%s): %v", in, err)
	}
	return string(out)
}

func refusedFor(t testing.TB, err error) Reason {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("want a *Refusal, got %v", err)
	}
	return r.Reason
}

// The examples of RFC 8785 §3.2.2 and §3.2.3 (the first number of §3.2.2,
// 333333333.33333329, is not an exact double and is tested as a refusal).
func TestRFC8785Examples(t *testing.T) {
	in := `{
  "numbers": [1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	want := `{"literals":[null,true,false],"numbers":[1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`
	if got := canonText(t, in); got != want {
		t.Errorf("§3.2.2:\n got %s\nwant %s", got, want)
	}
	sorting := `{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`
	want = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	if got := canonText(t, sorting); got != want {
		t.Errorf("§3.2.3:\n got %s\nwant %s", got, want)
	}
	_, err := Canonicalize(json.RawMessage(`[333333333.33333329]`), Limits{})
	if r := refusedFor(t, err); r != ReasonNumber {
		t.Errorf("333333333.33333329: reason %s, want %s", r, ReasonNumber)
	}
}

func TestNumbers(t *testing.T) {
	exact := map[string]string{
		"0": "0", "1": "1", "-1": "-1", "1.0": "1", "1E2": "100", "0.10": "0.1", "-1.5e0": "-1.5",
		"5e-324": "5e-324", "1.7976931348623157e308": "1.7976931348623157e+308",
		"9007199254740992": "9007199254740992", "295147905179352830000": "295147905179352830000",
		"1e21": "1e+21", "1e20": "100000000000000000000", "0.000001": "0.000001", "1e-7": "1e-7",
		"333333333.3333332": "333333333.3333332", "123456789012345": "123456789012345",
		"0e10": "0", "0.0": "0", "100e-2": "1", "0.1e1": "1", "-0.000001e-1": "-1e-7",
	}
	for in, want := range exact {
		out, same, ok := canonNumber(nil, []byte(in))
		got := string(out)
		if same {
			got = in
		}
		if !ok || got != want {
			t.Errorf("canonNumber(%s) = %q ok=%v, want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"-0", "-0.0", "-0e5", "9007199254740993", "0.30000000000000000001",
		"1e400", "-1e400", "1e-400", "123456789012345678901234567890", "1.00000000000000000000001"} {
		if _, _, ok := canonNumber(nil, []byte(in)); ok {
			t.Errorf("canonNumber(%s) accepted an inexact number", in)
		}
	}
}

// appendES must agree with encoding/json, which implements the same
// ECMAScript rule, and every printed double must be accepted as exact.
func TestNumbersAgainstEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		var f float64
		switch rng.IntN(3) {
		case 0:
			f = math.Float64frombits(rng.Uint64())
		case 1:
			f = rng.NormFloat64() * math.Pow(10, float64(rng.IntN(60)-30))
		default:
			f = float64(rng.Int64N(1<<53)) * float64(1-2*rng.IntN(2))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 && math.Signbit(f) {
			continue
		}
		ref, _ := json.Marshal(f)
		if got := appendES(nil, f); string(got) != string(ref) {
			t.Fatalf("appendES(%v) = %s, encoding/json %s", f, got, ref)
		}
		for _, text := range []string{strconv.FormatFloat(f, 'g', -1, 64), strconv.FormatFloat(f, 'e', -1, 64), string(ref)} {
			out, same, ok := canonNumber(nil, []byte(text))
			if same {
				out = []byte(text)
			}
			if !ok || string(out) != string(ref) {
				t.Fatalf("canonNumber(%s) = %s ok=%v, want %s", text, out, ok, ref)
			}
		}
	}
}

func TestStrings(t *testing.T) {
	cases := map[string]string{
		`"plain"`:          `"plain"`,
		`"a\/b"`:           `"a/b"`,
		`"\u0041\u00e9"`:   `"Aé"`,
		`"\u001F\u001f"`:   `"\u001f\u001f"`,
		`"\u000a\n\u0008"`: `"\n\n\b"`,
		`"\ud83d\ude00"`:   `"😀"`,
		`"\u2028<>&"`:      "\"\u2028<>&\"",
		`"tab\there\"q\\"`: `"tab\there\"q\\"`,
		`"\u0022\u005c"`:   `"\"\\"`,
		"\"\u007f\u0080\"": "\"\u007f\u0080\"",
		`"long ` + strings.Repeat(`x\n`, 5000) + `"`: `"long ` + strings.Repeat(`x\n`, 5000) + `"`,
	}
	for in, want := range cases {
		if got := canonText(t, in); got != want {
			t.Errorf("%.40s: got %.60s want %.60s", in, got, want)
		}
	}
	refused := map[string]Reason{
		`"\ud83d"`:           ReasonSurrogate,
		`"\ude00"`:           ReasonSurrogate,
		`"\ud83d\u0041"`:     ReasonSurrogate,
		`"\ud83dx"`:          ReasonSurrogate,
		"\"a\xffb\"":         ReasonUTF8,
		"\"a\xed\xa0\x80\"":  ReasonUTF8,
		"\"a\nb\"":           ReasonSyntax,
		`"\x"`:               ReasonSyntax,
		`"\u12"`:             ReasonSyntax,
		`"abc`:               ReasonSyntax,
		`{"a":1,"a":2}`:      ReasonDuplicate,
		`{"a":1,"\u0061":2}`: ReasonDuplicate,
		`[1,]`:               ReasonSyntax,
		`{"a" 1}`:            ReasonSyntax,
		`01`:                 ReasonSyntax,
		`1.`:                 ReasonSyntax,
		`-`:                  ReasonSyntax,
		`tru`:                ReasonSyntax,
		`[] []`:              ReasonSyntax,
		``:                   ReasonSyntax,
	}
	for in, want := range refused {
		_, err := Canonicalize(json.RawMessage(in), Limits{})
		if got := refusedFor(t, err); got != want {
			t.Errorf("%q: reason %s, want %s", in, got, want)
		}
	}
}

// reference is an independent, allocation-happy RFC 8785 serializer over
// encoding/json's generic decoding, used as an oracle.
func reference(t testing.TB, in []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(in))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	var buf bytes.Buffer
	if !refValue(&buf, v) {
		return nil, false
	}
	return buf.Bytes(), true
}

func refValue(buf *bytes.Buffer, v any) bool {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(x))
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return false
		}
		out, _ := json.Marshal(f)
		buf.Write(out)
	case string:
		refString(buf, x)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if !refValue(buf, e) {
				return false
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
		})
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			refString(buf, k)
			buf.WriteByte(':')
			if !refValue(buf, x[k]) {
				return false
			}
		}
		buf.WriteByte('}')
	}
	return true
}

func refString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r < 0x20:
			buf.WriteString(`\u00`)
			buf.WriteByte(hexDigits[r>>4])
			buf.WriteByte(hexDigits[r&15])
		default:
			buf.WriteRune(r)
		}
	}
	buf.WriteByte('"')
}

// checkAgainstReference compares Canonicalize with the oracle for inputs
// both accept, and checks that canonical output is a fixed point.
func checkAgainstReference(t testing.TB, in []byte) {
	got, err := Canonicalize(in, Limits{})
	if err != nil {
		var r *Refusal
		if !errors.As(err, &r) {
			t.Fatalf("Canonicalize(%q): non-refusal error %v", in, err)
		}
		return
	}
	if !json.Valid(got) {
		t.Fatalf("Canonicalize(%q) = %q: not valid JSON", in, got)
	}
	again, err := Canonicalize(got, Limits{})
	if err != nil || !bytes.Equal(again, got) {
		t.Fatalf("canonical form %q is not a fixed point: %q, %v", got, again, err)
	}
	if want, ok := reference(t, in); ok && !bytes.Equal(got, want) {
		t.Fatalf("Canonicalize(%q)\n got %s\nwant %s", in, got, want)
	}
}

func TestCanonicalizeAgainstReference(t *testing.T) {
	for _, in := range []string{
		`{"z":{"b":[1,2,{"y":null,"x":"\u00e9"}],"a":true},"\ud800\udc00":1,"\uffff":2,"\ue000":3}`,
		`[0.5,-2.25e-3,1e100,12,"\t\u0007",{}]`,
		` { "a" : [ ] , "b" : { } } `,
	} {
		checkAgainstReference(t, []byte(in))
	}
}

func TestValidUTF8(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"a", "b", " ", "é", "€", "😀", "\xff", "\xed\xa0\x80", "\xc0\xaf", "\xe2\x82", "\xf4\x90\x80\x80", "0123456789"}
	for range 20000 {
		var b strings.Builder
		for n := rng.IntN(40); n > 0; n-- {
			s := alphabet[rng.IntN(len(alphabet))]
			if rng.IntN(8) > 0 && !utf8.ValidString(s) {
				s = "x"
			}
			b.WriteString(s)
		}
		in := []byte(b.String())
		if got, want := validUTF8(in), utf8.Valid(in); got != want {
			t.Fatalf("validUTF8(%q) = %v, utf8.Valid %v", in, got, want)
		}
	}
}

// Strings of every length around the 8-byte scanning words, with escapes,
// raw multi-byte characters and invalid bytes at every offset.
func TestStringScanRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pieces := []string{"a", "b", "é", "😀", `\n`, `\"`, `\\`, `\/`, `\u00e9`, `\u001f`, `\u001F`, `\b`,
		`\ud83d\ude00`, `\ud83d`, "\x01", "\xff", `\x`, "\"", "\u2028"}
	for range 50000 {
		var b strings.Builder
		b.WriteByte('"')
		for n := rng.IntN(24); n > 0; n-- {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(4) > 0 {
				p = pieces[rng.IntN(8)] // mostly valid
			}
			b.WriteString(p)
		}
		b.WriteByte('"')
		in := []byte(b.String())
		got, err := Canonicalize(in, Limits{})
		if err != nil {
			switch refusedFor(t, err) {
			case ReasonSyntax:
				if json.Valid(in) {
					t.Fatalf("%q: refused as invalid JSON, encoding/json accepts it", in)
				}
			case ReasonUTF8, ReasonSurrogate:
			default:
				t.Fatalf("%q: unexpected refusal %v", in, err)
			}
			continue
		}
		var s string
		if e := json.Unmarshal(in, &s); e != nil {
			t.Fatalf("%q: accepted, encoding/json says %v", in, e)
		}
		var want bytes.Buffer
		refString(&want, s)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q: got %q want %q", in, got, want.Bytes())
		}
	}
}

// Long strings with escapes, backslash runs and multi-byte characters
// placed across the scanner's 8-byte word boundaries.
func TestStringScanBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	pieces := []string{"abcdefg", "é", "😀", `\n`, `\"`, `\\`, `\\\\`, `\/`, `\u00e9`, `\u001f`, `\t`, "\x01", "\xff", `\q`, "\""}
	for range 20000 {
		var b strings.Builder
		b.WriteByte('"')
		for b.Len() < 60+rng.IntN(300) {
			if rng.IntN(10) == 0 {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			} else if rng.IntN(3) == 0 {
				b.WriteString(pieces[3+rng.IntN(3)])
			} else {
				b.WriteString(strings.Repeat("x", rng.IntN(70)))
			}
		}
		b.WriteByte('"')
		in := []byte(b.String())
		got, err := Canonicalize(in, Limits{})
		var s string
		jerr := json.Unmarshal(in, &s)
		if err != nil {
			r := refusedFor(t, err)
			if r == ReasonSyntax && jerr == nil {
				t.Fatalf("%q: refused as invalid JSON, encoding/json accepts it", in)
			}
			if r != ReasonSyntax && r != ReasonUTF8 && r != ReasonSurrogate {
				t.Fatalf("%q: unexpected refusal %v", in, err)
			}
			continue
		}
		if jerr != nil {
			t.Fatalf("%q: accepted, encoding/json says %v", in, jerr)
		}
		var want bytes.Buffer
		refString(&want, s)
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q:\n got %q\nwant %q", in, got, want.Bytes())
		}
	}
}
