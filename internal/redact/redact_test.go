package redact

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestHeaders(t *testing.T) {
	h := http.Header{}
	for _, k := range []string{"Authorization", "proxy-authorization", "Cookie", "Set-Cookie",
		"x-api-key", "API-KEY", "OpenAI-Organization", "openai-project"} {
		h[k] = []string{"secret-" + k, "second"}
	}
	h.Set("Content-Type", "application/json")
	h.Set("OpenAI-Beta", "responses=v1")
	r := Headers(h)
	for k, vs := range r {
		if SensitiveHeader(k) {
			if len(vs) != 2 || vs[0] != Marker || vs[1] != Marker {
				t.Errorf("%s = %q", k, vs)
			}
		}
	}
	if r.Get("Content-Type") != "application/json" || r.Get("Openai-Beta") != "responses=v1" {
		t.Errorf("benign headers changed: %v", r)
	}
	if len(r) != 10 {
		t.Errorf("got %d headers, want 10", len(r))
	}
	if err := CheckHeaders(r); err != nil {
		t.Errorf("CheckHeaders(redacted) = %v", err)
	}
	if err := CheckHeaders(h); err == nil || !strings.Contains(err.Error(), "Api-Key") {
		t.Errorf("CheckHeaders(raw) = %v", err)
	}
	if h.Get("Authorization") != "secret-Authorization" {
		t.Error("Headers modified its input")
	}
	if err := CheckHeaders(Headers(r)); err != nil {
		t.Error("redaction is not idempotent")
	}
}

func TestURL(t *testing.T) {
	cases := map[string]string{
		"https://api.example/v1/responses":                                           "https://api.example/v1/responses",
		"https://u:p@h/x":                                                            "https://%5BREDACTED%5D@h/x",
		"https://h/x?api_key=s1&model=m&Token=s2&x=1#frag":                           "https://h/x?api_key=%5BREDACTED%5D&model=m&Token=%5BREDACTED%5D&x=1#%5BREDACTED%5D",
		"https://h/x?client_secret=a&PASSWORD=b&credentials=c&Authorization=d&sig=e": "https://h/x?client_secret=%5BREDACTED%5D&PASSWORD=%5BREDACTED%5D&credentials=%5BREDACTED%5D&Authorization=%5BREDACTED%5D&sig=e",
		"/v1/chat/completions?access_token=zz":                                       "/v1/chat/completions?access_token=%5BREDACTED%5D",
		"://bad":                                                                     Marker,
	}
	for in, want := range cases {
		got := URL(in)
		if got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
		if got != Marker {
			if err := CheckURL(got); err != nil {
				t.Errorf("CheckURL(%q) = %v", got, err)
			}
			if URL(got) != got {
				t.Errorf("URL not idempotent on %q: %q", got, URL(got))
			}
		}
	}
	for _, bad := range []string{"https://u:p@h/", "https://h/x?api_key=s", "https://h/#f", "https://h/x?my%20token=s"} {
		if CheckURL(bad) == nil {
			t.Errorf("CheckURL(%q) accepted", bad)
		}
	}
}

func TestBody(t *testing.T) {
	in := []byte(`{"k":"sk-proj-ABCDEFGHIJKLMNOPQRSTUV","h":"Bearer abcdefghijkl.mn","task-abcdefghijklmnopqrstuvwxyz":1,"short":"sk-abc","t":"my-relay-secret"}`)
	out, n := Body(in, "my-relay-secret", "")
	if n != 3 {
		t.Fatalf("n = %d (%s)", n, out)
	}
	want := `{"k":"[REDACTED]","h":"Bearer [REDACTED]","task-abcdefghijklmnopqrstuvwxyz":1,"short":"sk-abc","t":"[REDACTED]"}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if err := CheckBody(out); err != nil {
		t.Fatal(err)
	}
	if CheckBody(in) == nil {
		t.Fatal("CheckBody accepted a key")
	}
	if again, n := Body(out); n != 0 || string(again) != want {
		t.Fatalf("not idempotent: %d %s", n, again)
	}
	plain := []byte(`{"model":"gpt-5","max_output_tokens":10}`)
	if got, n := Body(plain); n != 0 || &got[0] != &plain[0] {
		t.Fatal("an innocent body was copied or changed")
	}
}

func TestError(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "https://h/x?token=tok-CANARY", Err: errors.New("dial failed for sk-ABCDEFGHIJKLMNOPQRSTU")}
	msg := Error(err, "other-CANARY")
	if strings.Contains(msg, "CANARY") || strings.Contains(msg, "sk-ABC") {
		t.Fatalf("leak: %s", msg)
	}
	if Error(errors.New("x other-CANARY y"), "other-CANARY") != "x [REDACTED] y" {
		t.Fatal("secret not scrubbed")
	}
}

func BenchmarkBodyClean(b *testing.B) {
	body := []byte(strings.Repeat(`{"role":"user","content":"the quick brown fox jumps over the lazy dog"},`, 2000))
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		Body(body, "relay-token-1234", "sk-upstream-123456789")
	}
}

func TestShortSecretsIgnored(t *testing.T) {
	if out, n := Body([]byte("a test of tests"), "test"); n != 0 || string(out) != "a test of tests" {
		t.Fatalf("a short secret was replaced: %s", out)
	}
}

// FuzzRedact: redaction never panics, is idempotent, and its output
// always passes the checks.
func FuzzRedact(f *testing.F) {
	f.Add("https://u:p@h/x?api_key=s&a=b#f", []byte(`{"k":"sk-ABCDEFGHIJKLMNOPQRST","h":"Bearer abcdefghij"}`), "secret-value-1")
	f.Add("/p?%zz=1&token", []byte("Bearer Bearer sk-sk-"), "")
	f.Fuzz(func(t *testing.T, u string, body []byte, secret string) {
		ru := URL(u, secret)
		if ru != Marker {
			if err := CheckURL(ru); err != nil {
				t.Fatalf("URL(%q) = %q fails CheckURL: %v", u, ru, err)
			}
			if again := URL(ru, secret); again != ru {
				t.Fatalf("URL not idempotent: %q then %q", ru, again)
			}
		}
		if len(secret) >= MinSecretLen && strings.Contains(ru, secret) &&
			!strings.Contains(Marker, secret) && !strings.Contains(url.QueryEscape(Marker), secret) {
			t.Fatalf("secret %q survived in URL %q", secret, ru)
		}
		rh := Headers(http.Header{"X-Any": {u}}, secret)
		if err := CheckHeaders(rh); err != nil {
			t.Fatalf("Headers(%q) fails CheckHeaders: %v", u, err)
		}
		if v := rh.Get("X-Any"); len(secret) >= MinSecretLen && strings.Contains(v, secret) && !strings.Contains(Marker, secret) {
			t.Fatalf("secret %q survived in header %q", secret, v)
		}
		rb, _ := Body(body, secret)
		if err := CheckBody(rb); err != nil {
			t.Fatalf("Body(%q) = %q fails CheckBody: %v", body, rb, err)
		}
		if again, n := Body(rb); n != 0 || !bytes.Equal(again, rb) {
			t.Fatalf("Body not idempotent on %q", rb)
		}
		if len(secret) >= MinSecretLen && bytes.Contains(rb, []byte(secret)) && !bytes.Contains([]byte(Marker), []byte(secret)) {
			t.Fatalf("secret %q survived in %q", secret, rb)
		}
	})
}
