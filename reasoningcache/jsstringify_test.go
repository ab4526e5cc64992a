package reasoningcache

import "testing"

func TestRestringify(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{}`},
		{` { "b" : 1 , "a" : [ true, false, null ] } `, `{"b":1,"a":[true,false,null]}`},
		{`{"s":"a\/b\u00e9\u2028<>&\"\\"}`, "{\"s\":\"a/bé\u2028<>&\\\"\\\\\"}"},
		{`{"c":"\u0001\u001f\b\f\n\r\t"}`, `{"c":"\u0001\u001f\b\f\n\r\t"}`},
		{`{"e":"\ud83d\ude00"}`, `{"e":"😀"}`},
		{`[0,-1,9007199254740991,-9007199254740991,0.5,-2.25,0.000001,123456.789]`, `[0,-1,9007199254740991,-9007199254740991,0.5,-2.25,0.000001,123456.789]`},
		{`"x"`, `"x"`},
		{`{"a01":1,"-1":2,"4294967295":3}`, `{"a01":1,"-1":2,"4294967295":3}`},
	} {
		got, ok := restringify(tc.in)
		if !ok || got != tc.want {
			t.Errorf("restringify(%s) = %s, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{
		`9007199254740992`, `-9007199254740992`, `1.0`, `1.50`, `1e3`, `1E3`, `-0`, `-0.0`, `0.0000001`,
		`1e21`, `0.1000000000000000055511151231257827`, `01`, `.5`, `1.`,
		`{"a":1,"a":2}`, `{"0":1}`, `{"42":1}`, `"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", "\"a\x01\"",
		`{"a":1,}`, `[1 2]`, `{"a"}`, `nul`, ``, `{} {}`,
	} {
		if got, ok := restringify(in); ok {
			t.Errorf("restringify(%q) = %q, want refusal", in, got)
		}
	}
}

func FuzzRestringify(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,"x"]}`, `1.0`, `"\ud800"`, `{"0":1}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, ok := restringify(s)
		if !ok {
			return
		}
		// The output is a fixed point: stringify(parse(out)) == out.
		again, ok := restringify(out)
		if !ok || again != out {
			t.Fatalf("not a fixed point: %q -> %q -> %q (%v)", s, out, again, ok)
		}
	})
}
