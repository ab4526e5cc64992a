package canonical

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"unicode/utf8"
)

// FormatID names this identity format. It is the "format" member of every
// canonical scope and is part of every domain tag; any change to the
// canonical form, the framing or a default limit bumps it.
const FormatID = "caddy-reasoning-relay/canonical/v1"

// MinSecretLen is the shortest HMAC secret accepted (128 bits).
const MinSecretLen = 16

// Scope is everything besides the visible history that changes the
// model's effective context for a request. Zero values mean "not sent".
// Raw credential values are only ever used as HMAC-SHA-256 input; they
// never appear in the canonical scope, the digests or any error.
type Scope struct {
	// Shape is the request shape of the history (ShapeChat or
	// ShapeResponses).
	Shape Shape
	// Origin is the upstream origin the relay dials, e.g.
	// "https://api.openai.com" (hashed as given: pass one spelling).
	Origin string
	// Endpoint is the upstream path actually requested, e.g.
	// "/v1/responses".
	Endpoint string
	// Credential is the upstream credential (raw).
	Credential string
	// RelayToken is the relay token the client authenticated with (raw).
	RelayToken string
	// Caller is the caller value (for example a configured caller header)
	// that separates users sharing a token (raw).
	Caller string
	// Model is the resolved upstream model.
	Model string
	// Reasoning is the effective reasoning object sent upstream.
	Reasoning json.RawMessage
	// Tools is the tools array sent upstream.
	Tools json.RawMessage
	// MaxOutputTokens is the effective max_output_tokens (0: not sent).
	MaxOutputTokens int64
	// Config is every other member of the translated upstream body, as a
	// JSON object (nil, null and {} are the same): instructions, tool_choice, parallel_tool_calls, text,
	// temperature, top_p, max_tool_calls, truncation, service_tier, and so
	// on. Transport members (top-level "stream" and "stream_options") are
	// ignored; members that have their own field here (input, model, tools,
	// reasoning, max_output_tokens, store, include) are an error.
	Config json.RawMessage
	// OpenAIBeta is the effective openai-beta header ("" when not sent).
	OpenAIBeta string
	// Store is the effective store flag.
	Store bool
	// Include lists the effective include entries after merging; order and
	// duplicates do not matter (they are sorted and deduplicated).
	Include []string
}

// configIgnored are transport members of Config that never change the
// model's context.
var configIgnored = [...]string{"stream", "stream_options"}

// configOwned are members of Config that have their own Scope field or are
// the history itself.
var configOwned = [...]string{"input", "model", "tools", "reasoning", "max_output_tokens", "store", "include"}

// rawSize is the scope's share of Limits.MaxBytes.
func (s *Scope) rawSize() int64 {
	n := len(s.Origin) + len(s.Endpoint) + len(s.Credential) + len(s.RelayToken) + len(s.Caller) +
		len(s.Model) + len(s.Reasoning) + len(s.Tools) + len(s.Config) + len(s.OpenAIBeta)
	for _, inc := range s.Include {
		n += len(inc)
	}
	return int64(n)
}

// fingerprint is the hex HMAC-SHA-256 of one labelled credential value.
func fingerprint(secret []byte, label, value string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(label))
	m.Write([]byte{0})
	m.Write([]byte(value))
	return hex.EncodeToString(m.Sum(nil))
}

// buildScope parses and assembles the canonical scope object in c.a and
// returns its root. It returns a reason for deterministic refusals and an
// error for caller mistakes.
func (c *canon) buildScope(secret []byte, s *Scope) (uint32, Reason, error) {
	a := &c.a
	c.scopeSrc = append(c.scopeSrc[:0], s.Reasoning...)
	c.scopeSrc = append(c.scopeSrc, s.Tools...)
	c.scopeSrc = append(c.scopeSrc, s.Config...)
	a.reset(c.scopeSrc)

	type member struct {
		key string
		val uint32
	}
	var members [16]member
	nm := 0
	add := func(key string, v uint32) {
		members[nm] = member{key, v}
		nm++
	}
	raw := func(key string, lo, hi int) Reason {
		if lo == hi {
			add(key, a.add(node{kind: kNull, size: 4}))
			return ""
		}
		a.charged = 0
		p := parser{a: a, pos: lo, end: hi, maxDepth: c.lim.MaxDepth, maxCharge: c.lim.MaxScratch, nodes: &c.nodes}
		v, ok := p.document(2)
		if !ok {
			return p.reason
		}
		add(key, v)
		return ""
	}
	str := func(key, v string) bool {
		if !utf8.ValidString(v) {
			return false
		}
		add(key, a.stringNode(v))
		return true
	}
	optStr := func(key, v string) bool {
		if v == "" {
			add(key, a.add(node{kind: kNull, size: 4}))
			return true
		}
		return str(key, v)
	}
	num := func(v int64) uint32 {
		off := len(a.scratch)
		a.scratch = strconv.AppendInt(a.scratch, v, 10)
		n := len(a.scratch) - off
		return a.add(node{kind: kNumber, val: span{off: uint32(off), n: uint32(n), scratch: true}, size: int64(n)})
	}
	secretOf := func(key, label, v string) {
		if v == "" {
			add(key, a.add(node{kind: kNull, size: 4}))
			return
		}
		add(key, a.stringNode(fingerprint(secret, label, v)))
	}

	r1, r2 := len(s.Reasoning), len(s.Reasoning)+len(s.Tools)
	if r := raw("reasoning", 0, r1); r != "" {
		return 0, r, nil
	}
	if r := raw("tools", r1, r2); r != "" {
		return 0, r, nil
	}
	if r := raw("config", r2, len(c.scopeSrc)); r != "" {
		return 0, r, nil
	}
	cfg := members[nm-1].val
	switch a.nodes[cfg].kind {
	case kObject:
	case kNull:
		// No other configuration is the empty object, however it is spelled.
		*a.node(cfg) = node{kind: kObject, first: uint32(len(a.kids)), size: 2}
	default:
		return 0, "", fmt.Errorf("canonical: scope: Config must be a JSON object")
	}
	if !(str("origin", s.Origin) && str("endpoint", s.Endpoint) && str("model", s.Model) &&
		optStr("openai_beta", s.OpenAIBeta) && str("format", FormatID) && str("shape", s.Shape.String())) {
		return 0, ReasonUTF8, nil
	}
	secretOf("credential", "credential", s.Credential)
	secretOf("relay_token", "relay_token", s.RelayToken)
	secretOf("caller", "caller", s.Caller)
	if s.MaxOutputTokens < 0 {
		return 0, "", fmt.Errorf("canonical: scope: MaxOutputTokens %d is negative", s.MaxOutputTokens)
	}
	if s.MaxOutputTokens == 0 {
		add("max_output_tokens", a.add(node{kind: kNull, size: 4}))
	} else {
		add("max_output_tokens", num(s.MaxOutputTokens))
	}
	store := node{kind: kFalse, size: 5}
	if s.Store {
		store = node{kind: kTrue, size: 4}
	}
	add("store", a.add(store))

	include := slices.Clone(s.Include)
	slices.Sort(include)
	include = slices.Compact(include)
	mark := len(a.stack)
	for _, inc := range include {
		if !utf8.ValidString(inc) {
			return 0, ReasonUTF8, nil
		}
		a.stack = append(a.stack, a.stringNode(inc))
	}
	add("include", a.container(kArray, a.stack[mark:]))
	a.stack = a.stack[:mark]

	lim := c.lim
	limits := [...]member{
		{"max_bytes", num(lim.MaxBytes)},
		{"max_depth", num(int64(lim.MaxDepth))},
		{"max_messages", num(int64(lim.MaxMessages))},
		{"max_nodes", num(int64(lim.MaxNodes))},
		{"max_scratch", num(lim.MaxScratch)},
		{"scratch_per_node", num(ScratchPerNode)},
	}
	for _, m := range limits {
		a.nodes[m.val].key = a.literal(m.key)
		a.stack = append(a.stack, m.val)
	}
	add("limits", a.container(kObject, a.stack[mark:]))
	a.stack = a.stack[:mark]

	for _, m := range members[:nm] {
		a.nodes[m.val].key = a.literal(m.key)
		a.stack = append(a.stack, m.val)
	}
	root := a.container(kObject, a.stack[mark:])
	a.stack = a.stack[:mark]

	// Sort and check the parsed values (and the scope object itself).
	if r := a.sortAll(); r != "" {
		return 0, r, nil
	}
	if a.nodes[cfg].kind == kObject {
		for _, key := range configOwned {
			if _, ok := a.member(cfg, key); ok {
				return 0, "", fmt.Errorf("canonical: scope: Config carries %q, which has its own field", key)
			}
		}
		a.removeNamed(cfg, configIgnored[:]...)
	}
	a.measure(root)
	return root, "", nil
}
