package translate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameTranslation reports how Translate's result differs from the
// reference's for body, or "" when they are byte for byte the same: the
// same error, or the same upstream body, fields, history and flags.
func sameTranslation(body []byte, cfg *Config) string {
	got, gerr := Translate(body, cfg)
	want, werr := refTranslate(body, cfg)
	if gerr != nil || werr != nil {
		if gerr == nil || werr == nil || !bytes.Equal(gerr.JSON(), werr.JSON()) || gerr.HTTPStatus() != werr.HTTPStatus() {
			return fmt.Sprintf("error %v, reference %v", gerr, werr)
		}
		return ""
	}
	gb, err1 := got.Body()
	wb, err2 := want.Body()
	if err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
		return fmt.Sprintf("body\n%s\nreference\n%s", gb, wb)
	}
	parts, n, err := got.BodyParts()
	if joined := bytes.Join(parts, nil); err != nil || !bytes.Equal(joined, gb) || int64(len(joined)) != n {
		return "body parts differ from the body"
	}
	if got.Shape != want.Shape || got.ClientModel != want.ClientModel || got.Model != want.Model ||
		got.Stream != want.Stream || got.IncludeUsage != want.IncludeUsage || got.Eligible != want.Eligible ||
		!bytes.Equal(got.callerStore, want.callerStore) || !bytes.Equal(got.callerInclude, want.callerInclude) {
		return fmt.Sprintf("request %+v, reference %+v", got, want)
	}
	if len(got.History) != len(want.History) {
		return fmt.Sprintf("%d history entries, reference %d", len(got.History), len(want.History))
	}
	for i := range got.History {
		g, w := got.History[i], want.History[i]
		if !bytes.Equal(g.Raw, w.Raw) || g.Role != w.Role || g.Items != w.Items {
			return fmt.Sprintf("history[%d] %+v, reference %+v", i, g, w)
		}
	}
	return ""
}

// referenceSeeds are the request bodies the property tests start from:
// the golden requests, the fuzz seeds and a Cursor-sized agent history.
func referenceSeeds(t testing.TB) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob("testdata/requests/*.in.json")
	for _, f := range files {
		out = append(out, readFile(t, f))
	}
	out = append(out, cursorBody(8<<10),
		[]byte(`{"model":"gpt-5.2","messages":[{"role":"user","content":"hi"}]}`),
		[]byte(`{"model":"fast","input":"hi","store":true}`),
		[]byte(`{"model":"gpt-5.2","messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"no"}],"tool_calls":[{"id":"c1","type":"custom","custom":{"name":"ApplyPatch","input":"x"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"o\u2028k"}]},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}},{"type":"file","file":{"file_id":"f1"}},{"type":"input_text","text":"t"}]}]}`),
		[]byte(`{"model":"gpt-5.2","messages":[{"role":"user","content":"`+strings.Repeat("long ", easyInputMin/5+1)+`"}],"stream":true,"stream_options":{"include_usage":true,"include_obfuscation":false},"reasoning_effort":"high","max_tokens":5,"n":1,"logprobs":false,"store":true}`),
	)
	return out
}

// mutate changes b at random in one of the ways that reach error paths:
// a byte replaced, a span deleted, a span duplicated, a token swapped.
func mutate(r *rand.Rand, b []byte) []byte {
	b = append([]byte(nil), b...)
	if len(b) == 0 {
		return b
	}
	i := r.IntN(len(b))
	switch r.IntN(5) {
	case 0:
		const set = `"{}[],:\ 0a-tn`
		b[i] = set[r.IntN(len(set))]
	case 1:
		j := min(len(b), i+r.IntN(16))
		b = append(b[:i], b[j:]...)
	case 2:
		j := min(len(b), i+r.IntN(64))
		b = append(b[:j], append(append([]byte(nil), b[i:j]...), b[j:]...)...)
	case 3:
		toks := []string{`null`, `""`, `1`, `true`, `[]`, `{}`, `"tool"`, `"assistant"`, `"custom"`, `"function"`, `"text"`, `"image_url"`, `"x\u0041"`, "\"\xff\""}
		b = append(b[:i], append([]byte(toks[r.IntN(len(toks))]), b[i:]...)...)
	default:
		b[i] ^= 0x80
	}
	return b
}

// TestTranslateMatchesReference holds Translate to the reference on the
// seeds and on thousands of random mutations of them, valid and invalid.
func TestTranslateMatchesReference(t *testing.T) {
	cfg := testConfig()
	r := rand.New(rand.NewPCG(1, 2))
	n := 1000
	if testing.Short() {
		n = 300
	}
	for _, seed := range referenceSeeds(t) {
		if d := sameTranslation(seed, cfg); d != "" {
			t.Fatalf("seed %.80s: %s", seed, d)
		}
		b := seed
		for range n {
			b = mutate(r, b)
			if d := sameTranslation(b, cfg); d != "" {
				t.Fatalf("mutation %q: %s", b, d)
			}
			if r.IntN(8) == 0 {
				b = seed
			}
		}
	}
}

// FuzzTranslateReference holds Translate to the reference; run it by hand
// with -fuzz for minutes.
func FuzzTranslateReference(f *testing.F) {
	for _, s := range referenceSeeds(f) {
		f.Add(s)
	}
	if files, _ := filepath.Glob("testdata/fuzz/FuzzTranslate/*"); len(files) > 0 {
		for _, p := range files {
			if raw, err := os.ReadFile(p); err == nil {
				if s := seedBytes(raw); s != nil {
					f.Add(s)
				}
			}
		}
	}
	cfg := testConfig()
	f.Fuzz(func(t *testing.T, body []byte) {
		if d := sameTranslation(body, cfg); d != "" {
			t.Fatal(d)
		}
	})
}

// seedBytes decodes a one-value "go test fuzz v1" corpus file of []byte.
func seedBytes(raw []byte) []byte {
	lines := strings.SplitN(string(raw), "\n", 3)
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "[]byte(") {
		return nil
	}
	var s string
	lit := strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")
	if err := json.Unmarshal([]byte(lit), &s); err != nil {
		return nil
	}
	return []byte(s)
}
