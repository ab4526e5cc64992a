package redact

import (
	"bytes"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

const (
	canaryKey   = "upstream-key-CANARY-0123456789"
	canaryToken = "relay-token-CANARY-abcdefghij"
)

// TestHeadersScrubSecretsInAnyHeader: a relay token or the upstream key
// sent in a header of any name is not kept.
func TestHeadersScrubSecretsInAnyHeader(t *testing.T) {
	h := http.Header{}
	h.Set("X-My-Auth", canaryToken)
	h.Set("X-Forwarded-Token", "prefix "+canaryKey+" suffix")
	h.Set("X-Trace", "sk-abcdefghijklmnopqrstuvwxyz")
	h.Set("Content-Type", "application/json")
	r := Headers(h, canaryKey, canaryToken)
	for k, vs := range r {
		for _, v := range vs {
			if strings.Contains(v, "CANARY") || strings.Contains(v, "sk-abc") {
				t.Errorf("%s kept a secret: %q", k, v)
			}
		}
	}
	if r.Get("X-Forwarded-Token") != "prefix "+Marker+" suffix" || r.Get("Content-Type") != "application/json" {
		t.Errorf("headers: %v", r)
	}
	if err := CheckHeaders(r); err != nil {
		t.Errorf("CheckHeaders(redacted) = %v", err)
	}
	if err := CheckHeaders(http.Header{"X-Trace": {"sk-abcdefghijklmnopqrstuvwxyz"}}); err == nil {
		t.Error("CheckHeaders accepted a key in an unnamed header")
	}
}

// TestURLScrubSecretsInQueryValuesAndPath: a secret in any query value
// (plain or percent-encoded) or in the path is replaced.
func TestURLScrubSecretsInQueryValuesAndPath(t *testing.T) {
	for _, in := range []string{
		"/v1/chat/completions?x=" + canaryToken + "&model=m",
		"/v1/chat/completions?x=" + url.QueryEscape("a "+canaryKey) + "&model=m",
		"/v1/" + canaryToken + "/chat/completions?model=m",
		"/v1/chat/completions?q=sk-abcdefghijklmnopqrstuvwxyz",
		"https://h/" + url.PathEscape(canaryKey+" x") + "/y",
	} {
		got := URL(in, canaryKey, canaryToken)
		dec, _ := url.QueryUnescape(got)
		if strings.Contains(dec, "CANARY") || strings.Contains(dec, "sk-abc") {
			t.Errorf("URL(%q) = %q keeps a secret", in, got)
		}
		if err := CheckURL(got); err != nil {
			t.Errorf("CheckURL(%q) = %v", got, err)
		}
		if again := URL(got, canaryKey, canaryToken); again != got {
			t.Errorf("URL not idempotent: %q then %q", got, again)
		}
	}
	if got := URL("/v1/chat/completions?x="+canaryToken+"&model=m", canaryToken); got != "/v1/chat/completions?x=%5BREDACTED%5D&model=m" {
		t.Errorf("spelling of the other parameters changed: %q", got)
	}
	if CheckURL("/x?q=sk-abcdefghijklmnopqrstuvwxyz") == nil {
		t.Error("CheckURL accepted a key in a query value")
	}
}

func TestSecretsLeavesShapedTokens(t *testing.T) {
	in := []byte(`{"text":"use sk-abcdefghijklmnopqrstuvwxyz or ` + canaryToken + `"}`)
	out, n := Secrets(in, canaryToken, "short")
	if n != 1 || string(out) != `{"text":"use sk-abcdefghijklmnopqrstuvwxyz or [REDACTED]"}` {
		t.Fatalf("Secrets = %d %s", n, out)
	}
	if got := SecretsText("x "+canaryKey, canaryKey); got != "x "+Marker {
		t.Fatalf("SecretsText = %q", got)
	}
	plain := []byte("nothing here")
	if got, n := Secrets(plain, canaryKey); n != 0 || &got[0] != &plain[0] {
		t.Fatal("an innocent text was copied")
	}
}

// TestContainsMatchesBytesContains holds the probe search to
// bytes.Contains on secrets at every position of a text, near misses and
// short texts.
func TestContainsMatchesBytesContains(t *testing.T) {
	secrets := []string{"sk-proj-Abc123XyZ_Abc123XyZ_", "relay-token-q7q7q7q7", "aaaaaaaa", "ZZZZZZZZZZZZZZZZZZZZ", "0123456789", "k\x00\xffk\x00\xffk\x00"}
	for _, s := range secrets {
		for _, text := range []string{"", s, s[:len(s)-1], s[1:], "x" + s, s + "x", "pre " + s[:len(s)-1] + "! " + s + " post",
			strings.Repeat(s[:len(s)/2], 5), strings.Repeat("a", 100) + s[len(s)/2:] + s,
			strings.Repeat("x", probeMin) + s[:len(s)-1], strings.Repeat("x", probeMin) + s, s + strings.Repeat(s[1:], probeMin/len(s)+1)} {
			if got, want := contains([]byte(text), s), strings.Contains(text, s); got != want {
				t.Errorf("contains(%q, %q) = %v, want %v", text, s, got, want)
			}
		}
	}
}

func FuzzContains(f *testing.F) {
	f.Add([]byte("a sk-proj-Abc123XyZ_Abc123 b"), "sk-proj-Abc123XyZ_Abc123")
	f.Add([]byte("aaaaaaaaaaaaaaaa"), "aaaaaaaa")
	f.Add([]byte(strings.Repeat("Q7 ", probeMin)+"sk-Q7Q7Q7Q7"), "sk-Q7Q7Q7Q7")
	f.Fuzz(func(t *testing.T, b []byte, s string) {
		if got, want := contains(b, s), bytes.Contains(b, []byte(s)); got != want {
			t.Fatalf("contains(%q, %q) = %v, want %v", b, s, got, want)
		}
	})
}
