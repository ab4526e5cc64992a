package translate

import (
	"bytes"
	"strings"
	"testing"
)

func TestBodyPartsEqualsBody(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-5.2","temperature":0.5,"tools":[{"type":"function","function":{"name":"f","parameters":{}}}],"messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-5.2","input":[{"type":"message","role":"user","content":"hi"}],"metadata":{"a":"b"}}`,
		`{"model":"gpt-5.2","input":"just text"}`,
	} {
		treq, aerr := Translate([]byte(body), &Config{})
		if aerr != nil {
			t.Fatal(aerr)
		}
		want, err := treq.Body()
		if err != nil {
			t.Fatal(err)
		}
		parts, n, err := treq.BodyParts()
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Join(parts, nil); !bytes.Equal(got, want) || n != int64(len(want)) {
			t.Fatalf("parts %s (%d), body %s", got, n, want)
		}
		// releasing the client body changes nothing that is sent
		src := []byte(body)
		treq, _ = Translate(src, &Config{})
		if free := treq.ReleaseClientBody(); free != (treq.Shape == ShapeChat) {
			t.Fatalf("%s: ReleaseClientBody reports the body free: %v", body, free)
		}
		for i := range src {
			src[i] = 'X'
		}
		got, _ := treq.Body()
		if treq.Shape == ShapeChat && !bytes.Equal(got, want) {
			t.Fatalf("after release and overwrite: %s, want %s", got, want)
		}
		if treq.History != nil {
			t.Fatal("history kept")
		}
	}
}

// TestLargePlainMessageIsNotCopied: a large {"role","content":"…"} message
// is already a Responses input message and is sent as the client's bytes.
func TestLargePlainMessageIsNotCopied(t *testing.T) {
	msg := `{"role":"user","content":"` + strings.Repeat("x", easyInputMin) + `"}`
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"s"},` + msg + `]}`)
	treq, aerr := Translate(body, &Config{})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if len(treq.Input) != 2 || string(treq.Input[1]) != msg || string(treq.Input[0]) != `{"type":"message","role":"system","content":"s"}` {
		t.Fatalf("input %.80q", treq.Input)
	}
	if treq.ReleaseClientBody() {
		t.Fatal("the body is reported free while a message is its bytes")
	}
	body[bytes.Index(body, []byte("xxxx"))] = 'y'
	if !bytes.Contains(treq.Input[1], []byte(`"content":"yxxx`)) {
		t.Fatal("the large message was copied")
	}
}

// TestReleaseCopiesSmallShareOfLargeMessages: when the large plain
// messages forwarded as the client's bytes are a small part of the body,
// ReleaseClientBody copies them, so that they no longer keep the whole
// body alive.
func TestReleaseCopiesSmallShareOfLargeMessages(t *testing.T) {
	msg := `{"role":"user","content":"` + strings.Repeat("x", easyInputMin) + `"}`
	other := `{"role":"assistant","content":"` + strings.Repeat("z", 3*easyInputMin) + `"}`
	body := []byte(`{"model":"m","messages":[` + other + `,` + msg + `]}`)
	treq, aerr := Translate(body, &Config{})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if len(treq.Input) != 2 || string(treq.Input[1]) != msg {
		t.Fatalf("input %.80q", treq.Input)
	}
	if !treq.ReleaseClientBody() {
		t.Fatal("the body is not reported free once the message is copied")
	}
	body[bytes.Index(body, []byte("xxxx"))] = 'y'
	if string(treq.Input[1]) != msg {
		t.Fatal("the large message still shares the client body")
	}
}

// TestDropInputFreesTheClientBody: once the upstream has the request,
// DropInput drops the input items and leaves no field value that is a
// byte of the client's body, for either shape, so that a large body is
// not kept while the answer streams.
func TestDropInputFreesTheClientBody(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-5.2","metadata":{"k":"v"},"messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"gpt-5.2","metadata":{"k":"v"},"input":[{"type":"message","role":"user","content":"hi"}]}`,
	} {
		src := []byte(body)
		treq, aerr := Translate(src, &Config{})
		if aerr != nil {
			t.Fatal(aerr)
		}
		treq.ReleaseClientBody()
		treq.DropInput()
		if treq.Input != nil {
			t.Fatalf("%s: input kept", body)
		}
		want := make([]string, len(treq.Fields))
		for i, f := range treq.Fields {
			want[i] = string(f.Value)
		}
		for i := range src {
			src[i] = 'X'
		}
		for i, f := range treq.Fields {
			if string(f.Value) != want[i] {
				t.Fatalf("%s: field %s still shares the client body: %s", body, f.Key, f.Value)
			}
		}
	}
}

// TestReleaseCopiesCallerStorage: the caller's explicit store, which an
// eligible request overrides, is bytes of the client's body; once
// ReleaseClientBody has reported the body free, KeepCallerStorage still
// puts back what the caller sent.
func TestReleaseCopiesCallerStorage(t *testing.T) {
	src := []byte(`{"model":"gpt-5.2","store":true,"messages":[{"role":"user","content":"hi"}]}`)
	treq, aerr := Translate(src, &Config{})
	if aerr != nil {
		t.Fatal(aerr)
	}
	if !treq.Eligible || treq.callerStore == nil {
		t.Fatalf("the caller's storage was not overridden (eligible %v)", treq.Eligible)
	}
	if !treq.ReleaseClientBody() {
		t.Fatal("a plain Chat body is not reported free")
	}
	for i := range src {
		src[i] = 'X'
	}
	treq.KeepCallerStorage()
	if v, _ := treq.Field("store"); string(v) != "true" {
		t.Fatalf("store %s", v)
	}
}

// TestRecycleReusesTheItemBuffer: after Recycle the request has no items
// left, and a later translation that builds its items in the recycled
// buffer produces exactly what a fresh one does.
func TestRecycleReusesTheItemBuffer(t *testing.T) {
	big := func(c string) []byte {
		return []byte(`{"model":"gpt-5.2","messages":[{"role":"user","content":"q"},{"role":"assistant","content":"` +
			strings.Repeat(c, 300<<10) + `"},{"role":"user","content":"more"}]}`)
	}
	fresh, aerr := Translate(big("b"), &Config{})
	if aerr != nil {
		t.Fatal(aerr)
	}
	want, _ := fresh.Body()
	for range 20 { // a garbage collection may empty the pool in between
		a, aerr := Translate(big("a"), &Config{})
		if aerr != nil {
			t.Fatal(aerr)
		}
		used := &a.out[:1][0]
		a.Recycle()
		a.Recycle()
		if a.Input != nil || a.History != nil || a.out != nil {
			t.Fatal("items kept after Recycle")
		}
		b, aerr := Translate(big("b"), &Config{})
		if aerr != nil {
			t.Fatal(aerr)
		}
		if got, _ := b.Body(); !bytes.Equal(got, want) {
			t.Fatal("a translation into a recycled buffer differs from a fresh one")
		}
		if &b.out[:1][0] == used {
			return
		}
	}
	t.Fatal("the recycled buffer was never reused")
}
