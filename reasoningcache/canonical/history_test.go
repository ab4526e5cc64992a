package canonical

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

var testSecret = []byte("test-secret-0123456789abcdef")

func testScope(shape Shape) Scope {
	return Scope{
		Shape:           shape,
		Origin:          "https://api.openai.com",
		Endpoint:        "/v1/responses",
		Credential:      "sk-upstream-credential",
		RelayToken:      "relay-token-1",
		Caller:          "alice",
		Model:           "gpt-5.2",
		Reasoning:       json.RawMessage(`{"effort":"high","summary":"auto"}`),
		Tools:           json.RawMessage(`[{"type":"function","name":"read_file","parameters":{"type":"object"},"strict":false}]`),
		MaxOutputTokens: 32000,
		Config:          json.RawMessage(`{"tool_choice":"auto","parallel_tool_calls":true,"instructions":"be brief"}`),
		Store:           false,
		Include:         []string{"reasoning.encrypted_content"},
	}
}

func raws(envs ...string) []json.RawMessage {
	out := make([]json.RawMessage, len(envs))
	for i, e := range envs {
		out[i] = json.RawMessage(e)
	}
	return out
}

var chatHistory = raws(
	`{"role":"system","content":"You are a coding agent."}`,
	`{"role":"user","content":"Fix the bug in a.ts"}`,
	`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}}]}`,
	`{"role":"tool","tool_call_id":"call_1","content":"export const a = 1;\n"}`,
	`{"role":"assistant","content":"Found it."}`,
	`{"role":"assistant","content":"Patching now."}`,
	`{"role":"user","content":[{"type":"text","text":"thanks"}]}`,
)

var responsesHistory = raws(
	`{"role":"developer","content":"You are a coding agent."}`,
	`{"role":"user","content":[{"type":"input_text","text":"Fix the bug in a.ts"}]}`,
	`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Let me look."}]}`,
	`{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\":\"a.ts\"}"}`,
	`{"type":"custom_tool_call","call_id":"call_2","name":"ApplyPatch","input":"*** Begin Patch\n*** End Patch"}`,
	`{"type":"function_call_output","call_id":"call_1","output":"export const a = 1;\n"}`,
	`{"type":"custom_tool_call_output","call_id":"call_2","output":"ok"}`,
	`{"role":"assistant","content":"Done."}`,
	`"thanks"`,
)

func mustDigests(t testing.TB, scope Scope, envs []json.RawMessage) *Digests {
	t.Helper()
	d, err := HistoryDigests(testSecret, scope, envs, Limits{})
	if err != nil {
		t.Fatalf("HistoryDigests: %v", err)
	}
	if d.Refusal != nil {
		t.Fatalf("HistoryDigests refused: %v", d.Refusal)
	}
	return d
}

func TestBlocks(t *testing.T) {
	d := mustDigests(t, testScope(ShapeChat), chatHistory)
	type span struct{ first, end int }
	var got []span
	for _, b := range d.Turns {
		got = append(got, span{b.First, b.End})
		if b.StartDigest != d.Boundaries[b.First] || b.EndDigest != d.Boundaries[b.End] {
			t.Errorf("chat block %d..%d: start/end digests are not the boundaries", b.First, b.End)
		}
	}
	if want := []span{{2, 3}, {4, 5}, {5, 6}}; !equalSpans(got, want) {
		t.Errorf("chat blocks %v, want %v", got, want)
	}
	wantKinds := []Kind{KindOther, KindOther, KindAssistant, KindOther, KindAssistant, KindAssistant, KindOther}
	if !equalKinds(d.Kinds, wantKinds) {
		t.Errorf("chat kinds %v, want %v", d.Kinds, wantKinds)
	}

	d = mustDigests(t, testScope(ShapeResponses), responsesHistory)
	got = got[:0]
	for _, b := range d.Turns {
		got = append(got, span{b.First, b.End})
	}
	if want := []span{{2, 5}, {7, 8}}; !equalSpans(got, want) {
		t.Errorf("responses blocks %v, want %v", got, want)
	}
	fp, err := Fingerprint(ShapeResponses, responsesHistory[2:5], Limits{})
	if err != nil || fp != d.Turns[0].Fingerprint {
		t.Errorf("Fingerprint of the run = %v, %v; block has %v", fp, err, d.Turns[0].Fingerprint)
	}
}

func equalSpans[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func equalKinds(a, b []Kind) bool { return equalSpans(a, b) }

// The digest at boundary k equals the final digest of the first k messages.
func TestPrefixProperty(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		envs  []json.RawMessage
	}{{ShapeChat, chatHistory}, {ShapeResponses, responsesHistory}} {
		full := mustDigests(t, testScope(tc.shape), tc.envs)
		for k := 0; k <= len(tc.envs); k++ {
			part := mustDigests(t, testScope(tc.shape), tc.envs[:k])
			if part.Final() != full.Boundaries[k] {
				t.Errorf("%s: boundary %d differs from the digest of the first %d messages", tc.shape, k, k)
			}
			if part.Scope != full.Scope {
				t.Errorf("%s: scope digest depends on the history", tc.shape)
			}
		}
	}
}

// The framing is exactly what the package documentation specifies.
func TestFramingByHand(t *testing.T) {
	scope := testScope(ShapeChat)
	d := mustDigests(t, scope, chatHistory[:3])
	canonScope, err := CanonicalScope(testSecret, scope, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	frame := func(b []byte) []byte {
		return append(binary.BigEndian.AppendUint64(nil, uint64(len(b))), b...)
	}
	msgs := make([][]byte, 3)
	for i, e := range chatHistory[:3] {
		if msgs[i], err = Canonicalize(e, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if msgs[2], err = NormalizeAssistant(ShapeChat, chatHistory[2], Limits{}); err != nil {
		t.Fatal(err)
	}
	stream := append([]byte(FormatID+"/history\x00"), frame(canonScope)...)
	if got := Digest(sha256.Sum256(stream)); got != d.Boundaries[0] {
		t.Errorf("boundary 0 = %v, by hand %v", d.Boundaries[0], got)
	}
	for i, m := range msgs {
		stream = append(stream, frame(m)...)
		if got := Digest(sha256.Sum256(stream)); got != d.Boundaries[i+1] {
			t.Errorf("boundary %d = %v, by hand %v", i+1, d.Boundaries[i+1], got)
		}
	}
	if got := Digest(sha256.Sum256(append([]byte(FormatID+"/scope\x00"), frame(canonScope)...))); got != d.Scope {
		t.Errorf("scope digest = %v, by hand %v", d.Scope, got)
	}
	if got := Digest(sha256.Sum256(append([]byte(FormatID+"/block\x00"), frame(msgs[2])...))); got != d.Turns[0].Fingerprint {
		t.Errorf("block fingerprint = %v, by hand %v", d.Turns[0].Fingerprint, got)
	}
}

func TestExtend(t *testing.T) {
	for _, tc := range []struct {
		shape Shape
		envs  []json.RawMessage
		block []json.RawMessage
	}{
		{ShapeChat, chatHistory, raws(`{"role":"assistant","content":"All fixed.","tool_calls":[]}`)},
		{ShapeResponses, responsesHistory, raws(
			`{"type":"message","role":"assistant","content":"Reading."}`,
			`{"type":"function_call","call_id":"call_9","name":"read_file","arguments":"{}"}`)},
	} {
		d := mustDigests(t, testScope(tc.shape), tc.envs)
		before := d.Final()
		b, err := d.Extend(tc.block...)
		if err != nil {
			t.Fatalf("%s: Extend: %v", tc.shape, err)
		}
		if d.Final() != before {
			t.Errorf("%s: Extend changed the history", tc.shape)
		}
		full := mustDigests(t, testScope(tc.shape), append(append([]json.RawMessage{}, tc.envs...), tc.block...))
		want := full.Turns[len(full.Turns)-1]
		if b != want {
			t.Errorf("%s: Extend = %+v\nhistory block %+v", tc.shape, b, want)
		}
		// Extending twice from the same state gives the same block.
		if again, _ := d.Extend(tc.block...); again != b {
			t.Errorf("%s: second Extend differs", tc.shape)
		}
	}
	d := mustDigests(t, testScope(ShapeChat), chatHistory)
	if _, err := d.Extend(raws(`{"role":"user","content":"x"}`)...); err == nil {
		t.Error("Extend accepted a user message")
	}
	if _, err := d.Extend(raws(`{"role":"assistant"}`, `{"role":"assistant"}`)...); err == nil {
		t.Error("Extend accepted two Chat messages")
	}
	if _, err := d.Extend(raws(`{"role":"assistant","content":[1,]}`)...); refusedFor(t, err) != ReasonSyntax {
		t.Errorf("Extend of malformed JSON: %v", err)
	}
}

// Every semantic change gives a different digest; transport details and
// equivalent forms do not.
func TestSensitivity(t *testing.T) {
	base := mustDigests(t, testScope(ShapeResponses), responsesHistory)
	mutateEnv := func(i int, env string) []json.RawMessage {
		out := append([]json.RawMessage{}, responsesHistory...)
		out[i] = json.RawMessage(env)
		return out
	}
	swapped := append([]json.RawMessage{}, responsesHistory...)
	swapped[3], swapped[4] = swapped[4], swapped[3]
	histories := map[string][]json.RawMessage{
		"one character":    mutateEnv(7, `{"role":"assistant","content":"Done!"}`),
		"extra tool call":  append(append([]json.RawMessage{}, responsesHistory[:5]...), append(raws(`{"type":"function_call","call_id":"call_x","name":"ls","arguments":"{}"}`), responsesHistory[5:]...)...),
		"reordered items":  swapped,
		"reordered parts":  mutateEnv(1, `{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]}`),
		"arguments spaced": mutateEnv(3, `{"type":"function_call","call_id":"call_1","name":"read_file","arguments":"{\"path\": \"a.ts\"}"}`),
		"dropped message":  append(append([]json.RawMessage{}, responsesHistory[:1]...), responsesHistory[2:]...),
	}
	for name, h := range histories {
		if d := mustDigests(t, testScope(ShapeResponses), h); d.Final() == base.Final() {
			t.Errorf("%s: same final digest", name)
		}
	}
	parts := mutateEnv(1, `{"role":"user","content":[{"type":"input_text","text":"b"},{"type":"input_text","text":"a"}]}`)
	if mustDigests(t, testScope(ShapeResponses), parts).Final() == mustDigests(t, testScope(ShapeResponses), histories["reordered parts"]).Final() {
		t.Error("reordered content parts hash equal")
	}

	scopes := map[string]func(*Scope){
		"shape":         func(s *Scope) { s.Shape = ShapeChat },
		"origin":        func(s *Scope) { s.Origin = "https://example.net" },
		"endpoint":      func(s *Scope) { s.Endpoint = "/v1/chat/completions" },
		"credential":    func(s *Scope) { s.Credential += "x" },
		"no credential": func(s *Scope) { s.Credential = "" },
		"relay token":   func(s *Scope) { s.RelayToken += "x" },
		"caller":        func(s *Scope) { s.Caller = "bob" },
		"model":         func(s *Scope) { s.Model = "gpt-5.2-mini" },
		"reasoning":     func(s *Scope) { s.Reasoning = json.RawMessage(`{"effort":"low","summary":"auto"}`) },
		"no reasoning":  func(s *Scope) { s.Reasoning = nil },
		"tools":         func(s *Scope) { s.Tools = json.RawMessage(`[]`) },
		"max tokens":    func(s *Scope) { s.MaxOutputTokens = 1 },
		"config": func(s *Scope) {
			s.Config = json.RawMessage(`{"tool_choice":"required","parallel_tool_calls":true,"instructions":"be brief"}`)
		},
		"openai-beta": func(s *Scope) { s.OpenAIBeta = "responses=experimental" },
		"store":       func(s *Scope) { s.Store = true },
		"include":     func(s *Scope) { s.Include = append(s.Include, "message.output_text.logprobs") },
		"no include":  func(s *Scope) { s.Include = nil },
	}
	// The last item (a string input) only exists in the Responses shape.
	objects := responsesHistory[:len(responsesHistory)-1]
	base = mustDigests(t, testScope(ShapeResponses), objects)
	seen := map[Digest]string{base.Scope: "base"}
	for name, mutate := range scopes {
		s := testScope(ShapeResponses)
		mutate(&s)
		d := mustDigests(t, s, objects)
		if prev, dup := seen[d.Scope]; dup {
			t.Errorf("scope change %q gives the scope digest of %q", name, prev)
		}
		seen[d.Scope] = name
		if d.Boundaries[0] == base.Boundaries[0] || d.Final() == base.Final() {
			t.Errorf("scope change %q does not change the prefix digests", name)
		}
	}
	base = mustDigests(t, testScope(ShapeResponses), responsesHistory)
	other, err := HistoryDigests([]byte("another-secret-0123456789"), testScope(ShapeResponses), responsesHistory, Limits{})
	if err != nil || other.Scope == base.Scope {
		t.Errorf("a different secret gives the same scope (%v)", err)
	}
	lim := DefaultLimits()
	lim.MaxDepth = 65
	other, err = HistoryDigests(testSecret, testScope(ShapeResponses), responsesHistory, lim)
	if err != nil || other.Scope == base.Scope {
		t.Errorf("a different limit gives the same scope (%v)", err)
	}

	same := map[string]func(*Scope){
		"stream in config": func(s *Scope) {
			s.Config = json.RawMessage(`{"stream":true,"stream_options":{"include_obfuscation":false},"tool_choice":"auto","parallel_tool_calls":true,"instructions":"be brief"}`)
		},
		"config key order": func(s *Scope) {
			s.Config = json.RawMessage(`{"instructions":"be brief", "parallel_tool_calls":true,"tool_choice":"auto"}`)
		},
		"include order and duplicates": func(s *Scope) {
			s.Include = []string{"reasoning.encrypted_content", "reasoning.encrypted_content"}
		},
		"zero limits are the defaults": func(*Scope) {},
	}
	for name, mutate := range same {
		s := testScope(ShapeResponses)
		mutate(&s)
		d, err := HistoryDigests(testSecret, s, responsesHistory, DefaultLimits())
		if err != nil || d.Final() != base.Final() || d.Scope != base.Scope {
			t.Errorf("%s changed the identity (%v)", name, err)
		}
	}
}

func TestScopeHidesCredentials(t *testing.T) {
	s := testScope(ShapeChat)
	out, err := CanonicalScope(testSecret, s, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{s.Credential, s.RelayToken, s.Caller, string(testSecret)} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("canonical scope contains a raw credential value %q", secret)
		}
	}
	if !json.Valid(out) || !strings.Contains(string(out), `"format":"`+FormatID+`"`) {
		t.Errorf("canonical scope %s", out)
	}
}

func TestErrors(t *testing.T) {
	good := testScope(ShapeChat)
	if _, err := HistoryDigests([]byte("short"), good, nil, Limits{}); err == nil {
		t.Error("short secret accepted")
	}
	bad := good
	bad.Shape = 0
	if _, err := HistoryDigests(testSecret, bad, nil, Limits{}); err == nil {
		t.Error("zero shape accepted")
	}
	if _, err := HistoryDigests(testSecret, good, nil, Limits{MaxDepth: -1}); err == nil {
		t.Error("negative limit accepted")
	}
	for _, cfg := range []string{`{"model":"x"}`, `{"input":[]}`, `{"store":false}`, `[1]`, `"x"`} {
		bad = good
		bad.Config = json.RawMessage(cfg)
		if _, err := HistoryDigests(testSecret, bad, nil, Limits{}); err == nil {
			t.Errorf("Config %s accepted", cfg)
		}
	}
	bad = good
	bad.MaxOutputTokens = -1
	if _, err := HistoryDigests(testSecret, bad, nil, Limits{}); err == nil {
		t.Error("negative MaxOutputTokens accepted")
	}
}

func refusal(t *testing.T, scope Scope, envs []json.RawMessage, lim Limits) *Refusal {
	t.Helper()
	d, err := HistoryDigests(testSecret, scope, envs, lim)
	if err != nil {
		t.Fatalf("HistoryDigests: %v", err)
	}
	if d.Refusal != nil && (len(d.Boundaries) != 0 || len(d.Turns) != 0 || d.Scope != (Digest{})) {
		t.Errorf("refused result carries digests")
	}
	return d.Refusal
}

func TestLimits(t *testing.T) {
	s := testScope(ShapeChat)
	nested := func(depth int) string {
		return `{"role":"user","content":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
	}
	big := `{"role":"user","content":"` + strings.Repeat("x", 1000) + `"}`
	many := `{"role":"user","content":[` + strings.Repeat("1,", 99) + `1]}` // 102 nodes
	escaped := `{"role":"user","content":"` + strings.Repeat(`\u0041`, 1000) + `"}`
	cases := []struct {
		name string
		envs []json.RawMessage
		lim  Limits
		want Reason
		msg  int
	}{
		{"depth ok", raws(nested(64)), Limits{}, "", 0},
		{"depth", raws(`{}`, nested(65)), Limits{}, ReasonDepth, 1},
		{"messages ok", raws(`{}`, `{}`), Limits{MaxMessages: 2}, "", 0},
		{"messages", raws(`{}`, `{}`, `{}`), Limits{MaxMessages: 2}, ReasonMessages, -1},
		{"bytes", raws(big), Limits{MaxBytes: int64(len(big)) + s.rawSize() - 1}, ReasonBytes, -1},
		{"bytes ok", raws(big), Limits{MaxBytes: int64(len(big)) + s.rawSize()}, "", 0},
		{"nodes", raws(many, many), Limits{MaxNodes: 150}, ReasonNodes, 1},
		{"scratch", raws(many), Limits{MaxScratch: 100 * ScratchPerNode}, ReasonScratch, 0},
		{"scratch decoded", raws(escaped), Limits{MaxScratch: 999 + 3*ScratchPerNode}, ReasonScratch, 0},
		{"scratch decoded ok", raws(escaped), Limits{MaxScratch: 1000 + 3*ScratchPerNode}, "", 0},
		{"syntax", raws(`{"role":"user",}`), Limits{}, ReasonSyntax, 0},
		{"not an object", raws(`[1]`), Limits{}, ReasonNotMessage, 0},
		{"number", raws(`{"role":"user","n":1e400}`), Limits{}, ReasonNumber, 0},
		{"duplicate", raws(`{"role":"user","role":"user"}`), Limits{}, ReasonDuplicate, 0},
	}
	for _, tc := range cases {
		r := refusal(t, s, tc.envs, tc.lim)
		switch {
		case tc.want == "" && r != nil:
			t.Errorf("%s: refused %v", tc.name, r)
		case tc.want != "" && (r == nil || r.Reason != tc.want || r.Message != tc.msg):
			t.Errorf("%s: got %v, want %s at %d", tc.name, r, tc.want, tc.msg)
		}
		// The same input always gets the same decision.
		if again := refusal(t, s, tc.envs, tc.lim); (again == nil) != (r == nil) || again != nil && *again != *r {
			t.Errorf("%s: decision changed between runs", tc.name)
		}
	}
	bad := s
	bad.Tools = json.RawMessage(`[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `]`)
	if r := refusal(t, bad, nil, Limits{}); r == nil || r.Reason != ReasonDepth || r.Message != -1 {
		t.Errorf("deep tools: %v", r)
	}
	bad = s
	bad.Model = "\xff"
	if r := refusal(t, bad, nil, Limits{}); r == nil || r.Reason != ReasonUTF8 {
		t.Errorf("invalid UTF-8 model: %v", r)
	}
}

// Work buffers are bounded by the scratch limit, whatever the input.
func TestScratchBoundsMemory(t *testing.T) {
	lim := Limits{MaxScratch: 1 << 16}
	lim, _ = lim.Effective()
	inputs := []string{
		`[` + strings.Repeat(`{"a":[1,2,"\u00e9"]},`, 5000) + `1]`,
		`"` + strings.Repeat(`\u00e9`, 100000) + `"`,
		`[` + strings.Repeat(`1.5e0,`, 20000) + `1]`,
	}
	for _, in := range inputs {
		c := getCanon(lim, lim.MaxNodes)
		c.a.reset([]byte(in))
		p := parser{a: &c.a, end: len(in), maxDepth: lim.MaxDepth, maxCharge: lim.MaxScratch, nodes: &c.nodes}
		p.document(1)
		used := int64(len(c.a.nodes))*ScratchPerNode + int64(len(c.a.scratch))
		if used > lim.MaxScratch+ScratchPerNode+8 {
			t.Errorf("%.20s: used %d bytes, limit %d", in, used, lim.MaxScratch)
		}
		if p.reason != ReasonScratch {
			t.Errorf("%.20s: reason %q, want %s", in, p.reason, ReasonScratch)
		}
		putCanon(c)
	}
}

func TestDigestText(t *testing.T) {
	d := mustDigests(t, testScope(ShapeChat), chatHistory)
	s := d.Final().String()
	if len(s) != 64 || strings.ToLower(s) != s {
		t.Fatalf("digest text %q", s)
	}
	p, err := ParseDigest(s)
	if err != nil || p != d.Final() {
		t.Fatalf("ParseDigest round trip: %v", err)
	}
	for _, bad := range []string{"", s[:63], strings.ToUpper(s), s[:63] + "g"} {
		if _, err := ParseDigest(bad); err == nil {
			t.Errorf("ParseDigest(%q) accepted", bad)
		}
	}
	b, _ := json.Marshal(d.Turns[0])
	var back Turn
	if err := json.Unmarshal(b, &back); err != nil || back != d.Turns[0] {
		t.Errorf("Block JSON round trip: %s, %v", b, err)
	}
	var r *Refusal
	if errors.As(error(nil), &r) {
		t.Fatal("unreachable")
	}
}

func TestConfigSpellings(t *testing.T) {
	var digests []Digest
	for _, cfg := range []string{"", "null", "{}", ` { } `, `{"stream":false}`, `{"stream_options":{"include_usage":true}}`} {
		s := testScope(ShapeChat)
		s.Config = nil
		if cfg != "" {
			s.Config = json.RawMessage(cfg)
		}
		digests = append(digests, mustDigests(t, s, nil).Scope)
	}
	for i, d := range digests {
		if d != digests[0] {
			t.Errorf("config spelling %d changes the scope", i)
		}
	}
}

// Concurrent passes share the pool but nothing else.
func TestConcurrent(t *testing.T) {
	want := mustDigests(t, testScope(ShapeResponses), responsesHistory)
	done := make(chan Digest, 8)
	for range 8 {
		go func() {
			d, err := HistoryDigests(testSecret, testScope(ShapeResponses), responsesHistory, Limits{})
			if err != nil || d.Refusal != nil {
				done <- Digest{}
				return
			}
			b, err := want.Extend(raws(`{"role":"assistant","content":"x"}`)...)
			if err != nil {
				done <- Digest{}
				return
			}
			_ = b
			done <- d.Final()
		}()
	}
	for range 8 {
		if got := <-done; got != want.Final() {
			t.Errorf("concurrent pass gave %v, want %v", got, want.Final())
		}
	}
}
