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
		treq.ReleaseClientBody()
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
	treq.ReleaseClientBody()
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
	treq.ReleaseClientBody()
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
