package canonical

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.json from the current implementation")

// goldenScope is Scope with raw JSON kept as strings, so the inputs in the
// golden file are byte-exact.
type goldenScope struct {
	Shape           string   `json:"shape"`
	Origin          string   `json:"origin"`
	Endpoint        string   `json:"endpoint"`
	Credential      string   `json:"credential,omitempty"`
	RelayToken      string   `json:"relay_token,omitempty"`
	Caller          string   `json:"caller,omitempty"`
	Model           string   `json:"model"`
	Reasoning       string   `json:"reasoning,omitempty"`
	Tools           string   `json:"tools,omitempty"`
	MaxOutputTokens int64    `json:"max_output_tokens,omitempty"`
	Config          string   `json:"config,omitempty"`
	OpenAIBeta      string   `json:"openai_beta,omitempty"`
	Store           bool     `json:"store"`
	Include         []string `json:"include,omitempty"`
}

func (g goldenScope) scope() Scope {
	s := Scope{Origin: g.Origin, Endpoint: g.Endpoint, Credential: g.Credential, RelayToken: g.RelayToken,
		Caller: g.Caller, Model: g.Model, MaxOutputTokens: g.MaxOutputTokens, OpenAIBeta: g.OpenAIBeta,
		Store: g.Store, Include: g.Include}
	s.Shape = ShapeChat
	if g.Shape == "responses" {
		s.Shape = ShapeResponses
	}
	if g.Reasoning != "" {
		s.Reasoning = json.RawMessage(g.Reasoning)
	}
	if g.Tools != "" {
		s.Tools = json.RawMessage(g.Tools)
	}
	if g.Config != "" {
		s.Config = json.RawMessage(g.Config)
	}
	return s
}

type goldenBlock struct {
	First       int    `json:"first"`
	End         int    `json:"end"`
	StartDigest Digest `json:"start_digest"`
	EndDigest   Digest `json:"end_digest"`
	Fingerprint Digest `json:"fingerprint"`
}

type goldenWant struct {
	Refusal        *Refusal      `json:"refusal,omitempty"`
	CanonicalScope string        `json:"canonical_scope,omitempty"`
	Scope          *Digest       `json:"scope,omitempty"`
	Canonical      []string      `json:"canonical,omitempty"`
	Kinds          []string      `json:"kinds,omitempty"`
	Boundaries     []Digest      `json:"boundaries,omitempty"`
	Blocks         []goldenBlock `json:"blocks,omitempty"`
}

type goldenCase struct {
	Name      string      `json:"name"`
	Secret    string      `json:"secret"`
	Scope     goldenScope `json:"scope"`
	Envelopes []string    `json:"envelopes"`
	Want      goldenWant  `json:"want"`
}

func goldenInputs() []goldenCase {
	base := goldenScope{
		Shape: "chat", Origin: "https://api.openai.com", Endpoint: "/v1/responses",
		Credential: "sk-golden", RelayToken: "relay-golden", Caller: "caller-golden", Model: "gpt-5.2",
		Reasoning: `{"effort":"high","summary":"auto"}`,
		Tools:     `[{"type":"function","name":"read_file","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]},"strict":null}]`,
		Config:    `{"tool_choice":"auto","parallel_tool_calls":true,"stream":true}`,
		Include:   []string{"reasoning.encrypted_content"},
	}
	responses := base
	responses.Shape = "responses"
	bare := goldenScope{Shape: "chat", Origin: "http://127.0.0.1:8080", Endpoint: "/v1/responses", Model: "m", Store: true}
	text := func(envs []json.RawMessage) []string {
		out := make([]string, len(envs))
		for i, e := range envs {
			out[i] = string(e)
		}
		return out
	}
	return []goldenCase{
		{Name: "empty history", Scope: bare},
		{Name: "chat agent turn", Scope: base, Envelopes: text(chatHistory)},
		{Name: "responses agent turn", Scope: responses, Envelopes: text(responsesHistory)},
		{Name: "chat equivalent assistant forms", Scope: base, Envelopes: []string{
			`{"role":"user","content":"hi"}`,
			`{"role":"assistant","content":[{"type":"text","text":"hel"},{"type":"text","text":"lo"}],"tool_calls":[],"refusal":null}`,
			`{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a.ts\"}"}}]}`,
		}},
		{Name: "unicode, escapes and numbers", Scope: bare, Envelopes: []string{
			`{"role":"user","content":"caf\u00e9 \ud83d\ude00 \/ \u001F tab\t","n":[1.0,1E30,4.50,2e-3,-0.5],"z":{"\u20ac":1,"\r":2,"1":3}}`,
			"{\"role\":\"assistant\",\"content\":\"\u2028 raw é\"}",
		}},
		{Name: "refused duplicate key", Scope: bare, Envelopes: []string{`{"role":"user","content":"a","content":"b"}`}},
		{Name: "refused inexact number", Scope: responses, Envelopes: []string{`{"role":"user","content":"a","n":12345678901234567890}`}},
	}
}

func computeGolden(t *testing.T, in goldenCase) goldenWant {
	t.Helper()
	scope := in.Scope.scope()
	envs := make([]json.RawMessage, len(in.Envelopes))
	for i, e := range in.Envelopes {
		envs[i] = json.RawMessage(e)
	}
	d, err := HistoryDigests([]byte(in.Secret), scope, envs, Limits{})
	if err != nil {
		t.Fatalf("%s: %v", in.Name, err)
	}
	if d.Refusal != nil {
		return goldenWant{Refusal: d.Refusal}
	}
	cs, err := CanonicalScope([]byte(in.Secret), scope, Limits{})
	if err != nil {
		t.Fatalf("%s: %v", in.Name, err)
	}
	w := goldenWant{CanonicalScope: string(cs), Scope: &d.Scope, Boundaries: d.Boundaries}
	for i, e := range in.Envelopes {
		w.Canonical = append(w.Canonical, canonEnvelope(t, scope.Shape, e))
		w.Kinds = append(w.Kinds, d.Kinds[i].String())
	}
	for _, b := range d.Turns {
		w.Blocks = append(w.Blocks, goldenBlock(b))
	}
	return w
}

// TestGolden pins the identity format: any change to a canonical form or a
// digest is a visible diff in testdata/golden.json (and needs a FormatID
// bump). Regenerate with: go test -run TestGolden -update
func TestGolden(t *testing.T) {
	path := filepath.Join("testdata", "golden.json")
	inputs := goldenInputs()
	for i := range inputs {
		inputs[i].Secret = "golden-secret-0123456789abcdef"
	}
	if *update {
		for i := range inputs {
			inputs[i].Want = computeGolden(t, inputs[i])
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(inputs); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []goldenCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) != len(inputs) {
		t.Fatalf("golden file has %d cases, inputs %d: run with -update and review the diff", len(cases), len(inputs))
	}
	for _, c := range cases {
		got := computeGolden(t, c)
		gotJSON, _ := json.MarshalIndent(got, "", "  ")
		wantJSON, _ := json.MarshalIndent(c.Want, "", "  ")
		if !bytes.Equal(gotJSON, wantJSON) {
			t.Errorf("%s: identity changed\n got %s\nwant %s", c.Name, gotJSON, wantJSON)
		}
	}
}
